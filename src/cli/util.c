/* What the subcommands share: errors, argument parsing, paging through the read API, printing
 * JSON values and tables. */
#include "cli/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bso: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* Finishes a client call: prints the error and returns 1, or 0. */
int cli_check(bso_client *cl, int rc)
{
    if (rc == 0)
        return 0;
    cli_die("%s", bso_client_errmsg(cl));
    return 1;
}

int cli_parse_i64(const char *s, const char *what, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno)
        return cli_die("%s must be an integer, not '%s'", what, s), -1;
    *out = v;
    return 0;
}

int cli_parse_f64(const char *s, const char *what, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !isfinite(v))
        return cli_die("%s must be a number, not '%s'", what, s), -1;
    *out = v;
    return 0;
}

/* Percent-encodes a job id for a URL path or query. */
void cli_escape(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *in && o + 4 < cap; in++) {
        unsigned char ch = (unsigned char)*in;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            strchr("-._~", ch)) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '%';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    out[o] = '\0';
}

/* Prints the body of the last answer as JSON. */
void cli_print_body(bso_client *cl)
{
    json_t *root = json_loads(bso_client_body(cl), 0, NULL);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    puts(text ? text : bso_client_body(cl));
    free(text);
    json_decref(root);
}

const char *cli_str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "-";
}

const char *cli_stage(const char *stage, const char *policy, bool brief)
{
    if (strcmp(policy, "bso") != 0)
        return stage;
    if (strcmp(stage, "MAB") == 0)
        return brief ? "Thompson" : "Thompson sampling (MAB)";
    return "search";
}

/* A number with that many decimals, or "-" for null. */
void cli_fmt_num(char *buf, size_t cap, json_t *v, int decimals)
{
    if (json_is_number(v))
        snprintf(buf, cap, "%.*f", decimals, json_number_value(v));
    else
        snprintf(buf, cap, "-");
}

/* Walks every page of a list endpoint (base is its path with "?limit=..."; pages continue from
 * "next_after", a job id or a trial number) and appends each row of the array `key` to all.
 * A page that names itself as the next (a server that does not page as ours does) ends the
 * walk with an error rather than asking for it forever. */
int cli_walk_pages(struct ctx *c, const char *base, const char *key, json_t *all)
{
    char path[1200], previous[sizeof path] = "";
    snprintf(path, sizeof path, "%s", base);
    int status;
    for (;;) {
        if (strcmp(path, previous) == 0) {
            cli_die("the server named the page %s as its own next page; stopping", path);
            return 1;
        }
        snprintf(previous, sizeof previous, "%s", path);
        if ((status = cli_check(c->cl, bso_client_get(c->cl, path))))
            break;
        json_t *root = json_loads(bso_client_body(c->cl), 0, NULL);
        json_array_extend(all, json_object_get(root, key)); /* no array there: nothing */
        json_t *next = json_object_get(root, "next_after");
        bool more = true;
        if (json_is_string(next)) {
            char esc[800];
            cli_escape(json_string_value(next), esc, sizeof esc);
            snprintf(path, sizeof path, "%s&after=%s", base, esc);
        } else if (json_is_integer(next)) {
            snprintf(path, sizeof path, "%s&after=%" PRId64, base,
                     (int64_t)json_integer_value(next));
        } else {
            more = false;
        }
        json_decref(root);
        if (!more)
            break;
    }
    return status;
}

/* Each row of a list endpoint to row(), under `header`, once every page has come (a request that
 * fails prints no table); with --json prints {key: [every row]} instead. */
int cli_each_row(struct ctx *c, const char *base, const char *key, const char *header,
                 void (*row)(json_t *r))
{
    json_t *all = json_array();
    const int status = cli_walk_pages(c, base, key, all);
    if (status == 0 && c->json) {
        json_t *o = json_object();
        json_object_set(o, key, all);
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(text ? text : "{}");
        free(text);
        json_decref(o);
    } else if (status == 0) {
        fputs(header, stdout);
        size_t i;
        json_t *r;
        json_array_foreach(all, i, r) row(r);
    }
    json_decref(all);
    return status;
}

/* "/jobs/<escaped id><suffix>". */
void cli_job_path(const char *job_id, const char *suffix, char *path, size_t cap)
{
    char id[800];
    cli_escape(job_id, id, sizeof id);
    snprintf(path, cap, "/jobs/%s%s", id, suffix);
}

/* A run's batch size over time from its progress points (GET /jobs/ID/trials), as
 * "32 32 48 64 (mean 44.1)": each epoch's own batch size, the middle of a long run elided.
 * Empty when the run reported none. */
void cli_batch_over_time(json_t *trial, char *buf, size_t cap)
{
    json_t *points = json_object_get(trial, "progress");
    const size_t n = json_array_size(points), head = 3, tail = 4;
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && o < cap; i++) {
        if (n > head + tail && i == head) {
            o += (size_t)snprintf(buf + o, cap - o, "... ");
            i = n - tail;
        }
        const double bs =
            json_number_value(json_object_get(json_array_get(points, i), "batch_size"));
        o += (size_t)snprintf(buf + o, cap - o, "%.0f ", bs);
    }
    if (n && o < cap)
        snprintf(buf + o, cap - o, "(mean %.1f)",
                 json_number_value(json_object_get(trial, "mean_batch_size")));
}

char *cli_read_file(const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f)
        return NULL;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *g = cap < (1u << 24) ? realloc(buf, cap * 2) : NULL;
            if (!g) {
                free(buf);
                buf = NULL;
            }
            buf = g;
            cap *= 2;
        }
    }
    if (f != stdin)
        fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* GET path into a fresh string (caller frees); NULL with the error printed. */
char *cli_fetch(struct ctx *c, const char *path)
{
    if (cli_check(c->cl, bso_client_get(c->cl, path)))
        return NULL;
    char *s = strdup(bso_client_body(c->cl));
    if (!s)
        cli_die("out of memory");
    return s;
}

int cli_post_for_job(struct ctx *c, const char *path, const char *body, json_t **job)
{
    *job = NULL;
    const int status = cli_check(c->cl, bso_client_post(c->cl, path, body));
    if (status != 0)
        return status;
    if (c->json) {
        cli_print_body(c->cl);
        return 0;
    }
    *job = json_loads(bso_client_body(c->cl), 0, NULL);
    return *job ? 0 : cli_die("the server's answer is not JSON");
}

int cli_open_monitor(bso_monitor **m)
{
    char err[512];
    if (bso_monitor_new(NULL, m, err, sizeof err) < 0)
        return cli_die("%s", err);
    return 0;
}
