/*
 * What the `bso` command's files share: the context a subcommand runs in, the command table's
 * row, the helpers (util.c) and one entry point per subcommand (cmd_*.c; the table is in bso.c).
 */
#ifndef BSO_CLI_CLI_H
#define BSO_CLI_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bso/client.h"
#include "bso/monitor.h"

struct ctx {
    const char *server;
    bool json;
    int argc; /* the subcommand's own arguments */
    char **argv;
    bso_client *cl; /* for commands that talk to the server */
};

struct command {
    const char *name;
    int nargs;   /* how many arguments it takes; -1: checked by the command */
    bool client; /* talks to the server */
    const char *args;
    const char *help;
    int (*run)(struct ctx *c);
};

/* Prints "bso: " and the message to stderr; returns 1. */
int cli_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Finishes a client call: prints the error and returns 1, or 0. */
int cli_check(bso_client *cl, int rc);

int cli_parse_i64(const char *s, const char *what, int64_t *out);

int cli_parse_f64(const char *s, const char *what, double *out);

/* Percent-encodes a job id for a URL path or query. */
void cli_escape(const char *in, char *out, size_t cap);

/* Prints the body of the last answer as JSON. */
void cli_print_body(bso_client *cl);

const char *cli_str(json_t *o, const char *key);

/* A number with that many decimals, or "-" for null. */
void cli_fmt_num(char *buf, size_t cap, json_t *v, int decimals);
/* A job's stage in words: under the bso policy, which has no pruning stage and whose wire stage
 * (Zeus's names, for Zeus's clients) says only whether Thompson sampling has begun, "search" or
 * "Thompson sampling (MAB)" ("Thompson" when brief); under the zeus policy, the stage itself. */
const char *cli_stage(const char *stage, const char *policy, bool brief);

/* Walks every page of a list endpoint (base is its path with "?limit=..."; pages continue from
 * "next_after", a job id or a trial number) and appends each row of the array `key` to all. */
int cli_walk_pages(struct ctx *c, const char *base, const char *key, json_t *all);

/* Each row of a list endpoint to row(), under `header`, once every page has come (a request
 * that fails prints no table); with --json prints {key: [every row]} instead. */
int cli_each_row(struct ctx *c, const char *base, const char *key, const char *header,
                 void (*row)(json_t *r));

/* "/jobs/<escaped id><suffix>". */
void cli_job_path(const char *job_id, const char *suffix, char *path, size_t cap);

/* A run's batch size over time from its progress points (GET /jobs/ID/trials), as
 * "32 32 48 64 (mean 44.1)": each epoch's own batch size, the middle of a long run elided.
 * Empty when the run reported none. */
void cli_batch_over_time(json_t *trial, char *buf, size_t cap);

char *cli_read_file(const char *path);

/* GET path into a fresh string (caller frees); NULL with the error printed. */
char *cli_fetch(struct ctx *c, const char *path);

/* POSTs body (NULL: none) to path, which answers with the job (as GET /jobs/ID). With --json
 * the answer is printed and *job stays NULL; else *job gets it (release with json_decref).
 * Returns the exit status, the error printed. */
int cli_post_for_job(struct ctx *c, const char *path, const char *body, json_t **job);

int cli_open_monitor(bso_monitor **m);

int cmd_jobs(struct ctx *c);

int cmd_show(struct ctx *c);

int cmd_trials(struct ctx *c);

int cmd_register(struct ctx *c);

int cmd_next(struct ctx *c);

int cmd_report(struct ctx *c);

int cmd_end(struct ctx *c);

int cmd_delete(struct ctx *c);

/* bso probe JOB: the job's device profile (POST /jobs/ID/profile, as bso.probe makes it), as a
 * table with bars for samples/s and joules per sample. */
int cmd_probe(struct ctx *c);

int cmd_reset(struct ctx *c);
int cmd_changed(struct ctx *c);

int cmd_transfer(struct ctx *c);

int cmd_gpus(struct ctx *c);

int cmd_measure(struct ctx *c);

#endif
