/*
 * bso: the command line for a BSO server and for the energy monitor. One row of `commands` per
 * subcommand; `bso help` or `bso CMD --help` explains each. The server comes from --server or
 * BSO_SERVER_URL (default http://127.0.0.1:8000). --json prints the server's JSON as it is.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bso/client.h"
#include "bso/monitor.h"
#include "bso/power.h"

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

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
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
static int check(bso_client *cl, int rc)
{
    if (rc == 0)
        return 0;
    die("%s", bso_client_errmsg(cl));
    return 1;
}

static int parse_i64(const char *s, const char *what, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno)
        return die("%s must be an integer, not '%s'", what, s), -1;
    *out = v;
    return 0;
}

static int parse_f64(const char *s, const char *what, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !isfinite(v))
        return die("%s must be a number, not '%s'", what, s), -1;
    *out = v;
    return 0;
}

/* Percent-encodes a job id for a URL path or query. */
static void escape(const char *in, char *out, size_t cap)
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
static void print_body(bso_client *cl)
{
    json_t *root = json_loads(bso_client_body(cl), 0, NULL);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    puts(text ? text : bso_client_body(cl));
    free(text);
    json_decref(root);
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "-";
}

/* A number with that many decimals, or "-" for null. */
static void fmt_num(char *buf, size_t cap, json_t *v, int decimals)
{
    if (json_is_number(v))
        snprintf(buf, cap, "%.*f", decimals, json_number_value(v));
    else
        snprintf(buf, cap, "-");
}

/* Walks every page of a list endpoint (base is its path with "?limit=..."; pages continue from
 * "next_after", a job id or a trial number) and appends each row of the array `key` to all,
 * or, when row is set, hands it to row() instead. */
static int walk_pages(struct ctx *c, const char *base, const char *key, json_t *all,
                      void (*row)(json_t *r))
{
    char path[1200];
    snprintf(path, sizeof path, "%s", base);
    int status;
    for (;;) {
        if ((status = check(c->cl, bso_client_get(c->cl, path))))
            break;
        json_t *root = json_loads(bso_client_body(c->cl), 0, NULL), *r;
        size_t i;
        json_array_foreach(json_object_get(root, key), i, r)
        {
            if (row)
                row(r);
            else
                json_array_append(all, r);
        }
        json_t *next = json_object_get(root, "next_after");
        bool more = true;
        if (json_is_string(next)) {
            char esc[800];
            escape(json_string_value(next), esc, sizeof esc);
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

/* Each row of a list endpoint to row(); with --json prints {key: [every row]} instead. */
static int each_row(struct ctx *c, const char *base, const char *key, void (*row)(json_t *r))
{
    json_t *all = json_array();
    const int status = walk_pages(c, base, key, all, c->json ? NULL : row);
    if (status == 0 && c->json) {
        json_t *o = json_object();
        json_object_set(o, key, all);
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(text ? text : "{}");
        free(text);
        json_decref(o);
    }
    json_decref(all);
    return status;
}

static void job_row(json_t *j)
{
    char cost[32];
    fmt_num(cost, sizeof cost, json_object_get(j, "min_cost"), 1);
    printf("%-32s %-8s %7" PRId64 " %14s %10" PRId64 "  %s\n", str(j, "job_id"), str(j, "stage"),
           (int64_t)json_integer_value(json_object_get(j, "trials")), cost,
           (int64_t)json_integer_value(json_object_get(j, "min_cost_batch_size")),
           str(j, "gpu_model"));
}

static int cmd_jobs(struct ctx *c)
{
    if (!c->json)
        printf("%-32s %-8s %7s %14s %10s  %s\n", "JOB", "STAGE", "TRIALS", "MIN COST", "BEST BS",
               "GPU");
    return each_row(c, "/jobs?limit=1000", "jobs", job_row);
}

/* The bso policy's view of each batch size, and the best so far. */
static void show_bs_stats(json_t *stats)
{
    printf("\n%10s %-8s %5s %9s %11s %14s %14s\n", "BATCH SIZE", "STATUS", "RUNS", "REACHED",
           "MEAN EPOCHS", "COST/EPOCH", "EXPECTED COST");
    json_t *st;
    size_t i;
    int64_t best = -1;
    double best_cost = INFINITY;
    json_array_foreach(stats, i, st)
    {
        char epochs[32], per[32], cost[32];
        fmt_num(epochs, sizeof epochs, json_object_get(st, "mean_epochs"), 2);
        fmt_num(per, sizeof per, json_object_get(st, "cost_per_epoch"), 1);
        fmt_num(cost, sizeof cost, json_object_get(st, "expected_cost"), 1);
        const int64_t bs = json_integer_value(json_object_get(st, "batch_size"));
        printf("%10" PRId64 " %-8s %5" PRId64 " %9" PRId64 " %11s %14s %14s\n", bs,
               str(st, "status"), (int64_t)json_integer_value(json_object_get(st, "runs")),
               (int64_t)json_integer_value(json_object_get(st, "successes")), epochs, per, cost);
        json_t *e = json_object_get(st, "expected_cost");
        if (json_is_number(e) && json_number_value(e) < best_cost) {
            best_cost = json_number_value(e);
            best = bs;
        }
    }
    if (best >= 0)
        printf("\nbest batch size so far: %" PRId64 " (lowest expected cost %.1f)\n", best,
               best_cost);
}

/* "/jobs/<escaped id><suffix>". */
static void job_path(const char *job_id, const char *suffix, char *path, size_t cap)
{
    char id[800];
    escape(job_id, id, sizeof id);
    snprintf(path, cap, "/jobs/%s%s", id, suffix);
}

/* The power limit chosen per batch size, with what each limit measured. */
static void show_power(json_t *profiles)
{
    size_t i, k;
    json_t *p, *m;
    printf("\npower limits (profiled in a run's first epoch; later runs set the chosen one):\n");
    printf("%10s %9s   %s\n", "BATCH SIZE", "CHOSEN W", "MEASURED: limit W samples/s power W");
    json_array_foreach(profiles, i, p)
    {
        printf("%10" PRId64 " %9.0f  ",
               (int64_t)json_integer_value(json_object_get(p, "batch_size")),
               json_number_value(json_object_get(p, "power_limit")));
        json_array_foreach(json_object_get(p, "measurements"), k, m)
        {
            printf(" %.0f:%.1f:%.1f", json_number_value(json_object_get(m, "power_limit")),
                   json_number_value(json_object_get(m, "samples_per_s")),
                   json_number_value(json_object_get(m, "power")));
        }
        printf("\n");
    }
}

/* A run's batch size over time from its progress points (GET /jobs/ID/trials), as
 * "32 32 48 64 (mean 44.1)": each epoch's own batch size, the middle of a long run elided.
 * Empty when the run reported none. */
static void batch_over_time(json_t *trial, char *buf, size_t cap)
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

/* The latest runs that reported their batch size over time (at most the last five trials). */
static void show_recent_progress(bso_client *cl, const char *job_id, int64_t last_trial)
{
    char suffix[64], path[1000];
    snprintf(suffix, sizeof suffix, "/trials?after=%" PRId64,
             last_trial > 5 ? last_trial - 5 : (int64_t)0);
    job_path(job_id, suffix, path, sizeof path);
    if (bso_client_get(cl, path) < 0)
        return;
    json_t *page = json_loads(bso_client_body(cl), 0, NULL), *t;
    size_t i;
    bool header = false;
    json_array_foreach(json_object_get(page, "trials"), i, t)
    {
        char line[256];
        batch_over_time(t, line, sizeof line);
        if (!line[0])
            continue;
        if (!header)
            printf("\nbatch size during the latest runs (per epoch):\n");
        header = true;
        printf("  trial %" PRId64 " (given %" PRId64 ", %s): %s\n",
               (int64_t)json_integer_value(json_object_get(t, "trial_number")),
               (int64_t)json_integer_value(json_object_get(t, "batch_size")), str(t, "status"),
               line);
    }
    json_decref(page);
}

static int cmd_show(struct ctx *c)
{
    bso_client *cl = c->cl;
    char path[900];
    job_path(c->argv[0], "", path, sizeof path);
    int status = check(cl, bso_client_get(cl, path));
    if (status == 0 && c->json)
        print_body(cl);
    if (status || c->json)
        return status;
    json_t *job = json_loads(bso_client_body(cl), 0, NULL);
    json_t *trials = json_object_get(job, "trials");
    char cost[32];
    fmt_num(cost, sizeof cost, json_object_get(job, "min_cost"), 1);
    printf("job      %s\nstage    %s\ntrials   %" PRId64 " (%" PRId64 " succeeded, %" PRId64
           " failed, %" PRId64 " running)\nmin cost %s at batch size %" PRId64 "\n",
           str(job, "job_id"), str(job, "stage"),
           (int64_t)json_integer_value(json_object_get(trials, "total")),
           (int64_t)json_integer_value(json_object_get(trials, "succeeded")),
           (int64_t)json_integer_value(json_object_get(trials, "failed")),
           (int64_t)json_integer_value(json_object_get(trials, "dispatched")), cost,
           (int64_t)json_integer_value(json_object_get(job, "min_cost_batch_size")));
    json_t *arms = json_object_get(job, "arms"), *a;
    size_t i;
    int64_t best = -1;
    double best_cost = INFINITY;
    if (json_array_size(arms) > 0) {
        printf("\n%10s %6s %14s %14s\n", "BATCH SIZE", "OBS", "MEAN COST", "POSTERIOR SD");
        json_array_foreach(arms, i, a)
        {
            double mean_cost = json_number_value(json_object_get(a, "mean_cost"));
            json_t *prec = json_object_get(a, "param_precision");
            char sd[32];
            if (json_is_number(prec))
                snprintf(sd, sizeof sd, "%.1f", 1.0 / sqrt(json_number_value(prec)));
            else
                snprintf(sd, sizeof sd, "0 (exact)");
            int64_t bs = json_integer_value(json_object_get(a, "batch_size"));
            printf("%10" PRId64 " %6" PRId64 " %14.1f %14s\n", bs,
                   (int64_t)json_integer_value(json_object_get(a, "num_observations")), mean_cost,
                   sd);
            if (mean_cost < best_cost) {
                best_cost = mean_cost;
                best = bs;
            }
        }
        printf("\nbest batch size so far: %" PRId64 " (lowest mean cost %.1f)\n", best, best_cost);
    } else if (json_array_size(json_object_get(job, "batch_size_stats")) > 0) {
        show_bs_stats(json_object_get(job, "batch_size_stats"));
    } else {
        printf("\nbest batch size so far: %" PRId64 " (pruning: the cheapest result)\n",
               (int64_t)json_integer_value(json_object_get(job, "min_cost_batch_size")));
    }
    json_t *unfit = json_object_get(job, "unfit_batch_sizes");
    if (json_array_size(unfit) > 0) {
        printf("unfit (the device's profile says they do not fit; never dispatched):");
        json_array_foreach(unfit, i, a) printf(" %" PRId64, (int64_t)json_integer_value(a));
        printf("\n");
    }
    json_t *infeasible = json_object_get(job, "infeasible_batch_sizes");
    if (json_array_size(infeasible) > 0) {
        printf("infeasible (runs kept ending without a report; `bso reset` to retry):");
        json_array_foreach(infeasible, i, a) printf(" %" PRId64, (int64_t)json_integer_value(a));
        printf("\n");
    }
    json_t *origin = json_object_get(job, "transferred_from");
    if (json_is_object(origin))
        printf(
            "transferred from %s (epochs of %" PRId64 " batch sizes, %s)\n", str(origin, "job_id"),
            (int64_t)json_integer_value(json_object_get(origin, "batch_sizes")), str(origin, "at"));
    json_t *changed = json_object_get(job, "change_detected_at_trial");
    if (json_is_integer(changed))
        printf("the job changed: found at trial %" PRId64
               "; what was learnt before weighs as one run per size\n",
               (int64_t)json_integer_value(changed));
    if (json_array_size(json_object_get(job, "power_profiles")) > 0)
        show_power(json_object_get(job, "power_profiles"));
    show_recent_progress(cl, c->argv[0], json_integer_value(json_object_get(trials, "total")));
    json_decref(job);
    return 0;
}

static void trial_row(json_t *t)
{
    char tm[32], en[32], co[32];
    fmt_num(tm, sizeof tm, json_object_get(t, "time"), 2);
    fmt_num(en, sizeof en, json_object_get(t, "energy"), 1);
    fmt_num(co, sizeof co, json_object_get(t, "cost"), 1);
    json_t *conv = json_object_get(t, "converged");
    char over_time[256];
    batch_over_time(t, over_time, sizeof over_time);
    printf("%6" PRId64 " %10" PRId64 " %-12s %-10s %10s %12s %12s %-9s %s\n",
           (int64_t)json_integer_value(json_object_get(t, "trial_number")),
           (int64_t)json_integer_value(json_object_get(t, "batch_size")), str(t, "type"),
           str(t, "status"), tm, en, co,
           json_is_boolean(conv) ? (json_is_true(conv) ? "yes" : "no") : "-", over_time);
}

static int cmd_trials(struct ctx *c)
{
    char base[1000];
    job_path(c->argv[0], "/trials?limit=1000", base, sizeof base);
    if (!c->json)
        printf("%6s %10s %-12s %-10s %10s %12s %12s %-9s %s\n", "TRIAL", "BATCH", "TYPE", "STATUS",
               "TIME (s)", "ENERGY (J)", "COST", "CONVERGED", "BATCH SIZE PER EPOCH");
    return each_row(c, base, "trials", trial_row);
}

static char *read_file(const char *path)
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

static int cmd_register(struct ctx *c)
{
    char *spec = read_file(c->argv[0]);
    if (!spec)
        return die("cannot read %s: %s", c->argv[0], strerror(errno));
    bso_client *cl = c->cl;
    char id[BSO_CLIENT_ID_MAX];
    bool created;
    int status = check(cl, bso_client_register(cl, spec, id, &created));
    if (status == 0) {
        if (c->json)
            print_body(cl);
        else
            printf("%s %s\n", id, created ? "registered" : "already registered, same spec");
    }
    free(spec);
    return status;
}

static int cmd_next(struct ctx *c)
{
    bso_client *cl = c->cl;
    int64_t bs, n;
    int status = check(cl, bso_client_next(cl, c->argv[0], &bs, &n));
    if (status == 0) {
        if (c->json)
            print_body(cl);
        else
            printf("batch size %" PRId64 " (trial %" PRId64 ")\n", bs, n);
    }
    return status;
}

/* Writes text to f with every "</script" made "<\/script", so inlined scripts and JSON cannot
 * close their <script> element early. */
static void put_inline(FILE *f, const char *text)
{
    for (const char *p = text; *p; p++) {
        if (p[0] == '<' && p[1] == '/' && strncasecmp(p + 2, "script", 6) == 0) {
            fputs("<\\/", f);
            p++;
            continue;
        }
        fputc(*p, f);
    }
}

/* GET path into a fresh string (caller frees); NULL with the error printed. */
static char *fetch(struct ctx *c, const char *path)
{
    if (check(c->cl, bso_client_get(c->cl, path)))
        return NULL;
    char *s = strdup(bso_client_body(c->cl));
    if (!s)
        die("out of memory");
    return s;
}

/* bso report JOB --html FILE: the dashboard's job page as one self-contained file (its script,
 * style and charting library from the server's /ui, the job's data inlined). */
static int html_report(struct ctx *c, const char *job_id, const char *out_path)
{
    char path[1200];
    job_path(job_id, "", path, sizeof path);
    char *job = fetch(c, path);
    if (!job)
        return 1;
    json_t *trials = json_array();
    char base[1200];
    job_path(job_id, "/trials?limit=1000", base, sizeof base);
    int status = walk_pages(c, base, "trials", trials, NULL);
    static const char *const names[] = {"/ui/uPlot.min.css", "/ui/style.css", "/ui/uPlot.min.js",
                                        "/ui/app.js"};
    char *assets[4] = {0};
    for (int i = 0; i < 4 && status == 0; i++)
        if (!(assets[i] = fetch(c, names[i])))
            status = 1;
    char *trials_text = json_dumps(trials, JSON_COMPACT);
    FILE *f = status == 0 ? (strcmp(out_path, "-") == 0 ? stdout : fopen(out_path, "w")) : NULL;
    if (status == 0 && !f)
        status = die("cannot write %s: %s", out_path, strerror(errno));
    if (f) {
        fputs("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
              "<title>BSO report</title>\n<style>\n",
              f);
        fputs(assets[0], f);
        fputs("\n", f);
        fputs(assets[1], f);
        fputs("\n</style>\n</head>\n<body>\n<header><span class=\"brand\">BSO</span>"
              "<span class=\"subtitle\">report</span>"
              "<form id=\"token-form\" hidden><input id=\"token\"></form></header>\n"
              "<main id=\"app\"></main>\n<script>\n",
              f);
        put_inline(f, assets[2]);
        fputs("\n</script>\n<script>\nwindow.BSO_REPORT = {\"job\": ", f);
        put_inline(f, job);
        fputs(", \"trials\": ", f);
        put_inline(f, trials_text ? trials_text : "[]");
        fputs("};\n</script>\n<script>\n", f);
        put_inline(f, assets[3]);
        fputs("\n</script>\n</body>\n</html>\n", f);
        if (f != stdout && fclose(f) != 0)
            status = die("cannot write %s: %s", out_path, strerror(errno));
    }
    free(trials_text);
    for (int i = 0; i < 4; i++)
        free(assets[i]);
    json_decref(trials);
    free(job);
    return status;
}

static int cmd_report(struct ctx *c)
{
    if (c->argc == 3 && strcmp(c->argv[1], "--html") == 0)
        return html_report(c, c->argv[0], c->argv[2]);
    if (c->argc != 7 && c->argc != 8)
        return die("expected JOB BATCH_SIZE TRIAL TIME_S ENERGY_J METRIC EPOCH [SOURCE], or JOB "
                   "--html FILE"),
               2;
    int64_t bs, n, epoch;
    double t, e, metric;
    if (parse_i64(c->argv[1], "BATCH_SIZE", &bs) < 0 || parse_i64(c->argv[2], "TRIAL", &n) < 0 ||
        parse_f64(c->argv[3], "TIME_S", &t) < 0 || parse_f64(c->argv[4], "ENERGY_J", &e) < 0 ||
        parse_f64(c->argv[5], "METRIC", &metric) < 0 || parse_i64(c->argv[6], "EPOCH", &epoch) < 0)
        return 2;
    bso_client *cl = c->cl;
    struct bso_report_answer a;
    const char *source = c->argc == 8 ? c->argv[7] : NULL;
    int status =
        check(cl, bso_client_report(cl, c->argv[0], bs, n, t, e, metric, epoch, source, &a));
    if (status == 0) {
        if (c->json)
            print_body(cl);
        else
            printf("%s%s\n",
                   a.stop_train ? (a.converged ? "stop: converged. " : "stop: failed. ")
                                : "continue. ",
                   a.message);
    }
    return status;
}

static int cmd_end(struct ctx *c)
{
    int64_t bs, n;
    if (parse_i64(c->argv[1], "BATCH_SIZE", &bs) < 0 || parse_i64(c->argv[2], "TRIAL", &n) < 0)
        return 2;
    bso_client *cl = c->cl;
    int status = check(cl, bso_client_end_trial(cl, c->argv[0], bs, n));
    if (status == 0 && !c->json)
        printf("trial %" PRId64 " ended\n", n);
    else if (status == 0)
        puts("null");
    return status;
}

static int cmd_delete(struct ctx *c)
{
    bso_client *cl = c->cl;
    int status = check(cl, bso_client_delete(cl, c->argv[0]));
    if (status == 0)
        puts(c->json ? "null" : "deleted");
    return status;
}

/* A bar of up to `width` characters for v out of max. */
static void bar(char *out, size_t cap, double v, double max, int width)
{
    int n = max > 0 && v > 0 ? (int)(width * v / max + 0.5) : 0;
    if (n > width)
        n = width;
    if ((size_t)n >= cap)
        n = (int)cap - 1;
    memset(out, '#', (size_t)n);
    out[n] = '\0';
}

/* bso probe JOB: the job's device profile (POST /jobs/ID/profile, as bso.probe makes it), as a
 * table with bars for samples/s and joules per sample. */
static int cmd_probe(struct ctx *c)
{
    bso_client *cl = c->cl;
    char path[900];
    job_path(c->argv[0], "", path, sizeof path);
    int status = check(cl, bso_client_get(cl, path));
    if (status)
        return status;
    json_t *job = json_loads(bso_client_body(cl), 0, NULL);
    json_t *profile = json_object_get(job, "profile"), *e;
    if (c->json) {
        char *text = json_dumps(profile, JSON_COMPACT);
        puts(text ? text : "[]");
        free(text);
        json_decref(job);
        return 0;
    }
    if (json_array_size(profile) == 0) {
        printf("job %s has no profile yet: run bso.probe in the training script and post it "
               "(docs/client.md)\n",
               c->argv[0]);
        json_decref(job);
        return 0;
    }
    double max_sps = 0, max_jps = 0;
    size_t i;
    json_array_foreach(profile, i, e)
    {
        const double sps = json_number_value(json_object_get(e, "samples_per_s"));
        const double jps = json_number_value(json_object_get(e, "joules_per_sample"));
        max_sps = sps > max_sps ? sps : max_sps;
        max_jps = jps > max_jps ? jps : max_jps;
    }
    printf("%10s %5s %12s %12s %12s  %-20s %-20s %s\n", "BATCH SIZE", "FITS", "SAMPLES/S",
           "J/SAMPLE", "PEAK MiB", "SAMPLES/S", "J/SAMPLE", "DEVICE");
    json_array_foreach(profile, i, e)
    {
        char sps[32], jps[32], b1[24], b2[24], mem[32];
        json_t *peak = json_object_get(e, "peak_memory_bytes");
        fmt_num(sps, sizeof sps, json_object_get(e, "samples_per_s"), 1);
        fmt_num(jps, sizeof jps, json_object_get(e, "joules_per_sample"), 4);
        if (json_is_number(peak))
            snprintf(mem, sizeof mem, "%.1f", json_number_value(peak) / 1048576.0);
        else
            snprintf(mem, sizeof mem, "-");
        bar(b1, sizeof b1, json_number_value(json_object_get(e, "samples_per_s")), max_sps, 20);
        bar(b2, sizeof b2, json_number_value(json_object_get(e, "joules_per_sample")), max_jps, 20);
        printf("%10" PRId64 " %5s %12s %12s %12s  %-20s %-20s %s\n",
               (int64_t)json_integer_value(json_object_get(e, "batch_size")),
               json_is_true(json_object_get(e, "feasible")) ? "yes" : "no", sps, jps, mem, b1, b2,
               str(e, "device"));
    }
    json_decref(job);
    return 0;
}

static int cmd_reset(struct ctx *c)
{
    bso_client *cl = c->cl;
    char path[900];
    job_path(c->argv[0], "/reset", path, sizeof path);
    int status = check(cl, bso_client_post(cl, path, NULL));
    if (status == 0) {
        if (c->json)
            print_body(cl);
        else
            printf("reset %s: it explores again from its default batch size\n", c->argv[0]);
    }
    return status;
}

static int cmd_transfer(struct ctx *c)
{
    bso_client *cl = c->cl;
    char path[900];
    job_path(c->argv[1], "/transfer", path, sizeof path);
    json_t *body = json_pack("{s:s}", "from", c->argv[0]);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return die("out of memory");
    int status = check(cl, bso_client_post(cl, path, text));
    free(text);
    if (status != 0)
        return status;
    if (c->json) {
        print_body(cl);
        return 0;
    }
    json_t *job = json_loads(bso_client_body(cl), 0, NULL);
    json_t *origin = json_object_get(job, "transferred_from");
    printf("%s starts from %s's epochs-to-target at %" PRId64
           " batch sizes; its costs per epoch are measured afresh\n",
           c->argv[1], c->argv[0],
           (int64_t)json_integer_value(json_object_get(origin, "batch_sizes")));
    json_decref(job);
    return 0;
}

static int open_monitor(bso_monitor **m)
{
    char err[512];
    if (bso_monitor_new(NULL, m, err, sizeof err) < 0)
        return die("%s", err);
    return 0;
}

static void say_line(void *ctx, const char *line)
{
    (void)ctx;
    printf("%s\n", line);
}

/* bso gpus --restore-power: the limits of processes that died holding them. */
static int restore_power(void)
{
    const int rc = bso_power_restore_recorded(say_line, NULL);
    if (rc < 0)
        return die("power limits not restored: %s", bso_strerror(rc));
    if (rc == 0)
        printf("no power limit left behind to restore\n");
    return 0;
}

static int cmd_gpus(struct ctx *c)
{
    if (c->argc == 1 && !strcmp(c->argv[0], "--restore-power"))
        return restore_power();
    if (c->argc > 0)
        return die("gpus takes no argument but --restore-power, not '%s'", c->argv[0]), 2;
    bso_monitor *m;
    if (open_monitor(&m))
        return 1;
    size_t n = bso_monitor_gpu_count(m);
    if (c->json) {
        json_t *gpus = json_array();
        for (size_t i = 0; i < n; i++) {
            struct bso_gpu_info g;
            bso_monitor_gpu(m, i, &g);
            json_array_append_new(gpus,
                                  json_pack("{s:i, s:s, s:s, s:f, s:f, s:s}", "index", g.index,
                                            "name", g.name, "uuid", g.uuid, "max_power_limit_w",
                                            g.max_power_limit_w, "power_limit_w", g.power_limit_w,
                                            "source", bso_energy_source_name(g.source)));
        }
        json_t *o = json_pack("{s:o, s:f, s:s, s:s}", "gpus", gpus, "max_power_w",
                              bso_monitor_max_power_w(m), "source",
                              bso_energy_source_name(bso_monitor_source(m)), "cpu_source",
                              bso_energy_source_name(bso_monitor_cpu_source(m)));
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(text);
        free(text);
        json_decref(o);
    } else {
        for (size_t i = 0; i < n; i++) {
            struct bso_gpu_info g;
            bso_monitor_gpu(m, i, &g);
            printf("GPU %d  %s  %s  max power %.0f W (limit now %.0f W)  energy from %s\n", g.index,
                   g.name, g.uuid, g.max_power_limit_w, g.power_limit_w,
                   bso_energy_source_name(g.source));
        }
        if (n == 0)
            printf("no NVIDIA GPU visible\n");
        printf("job max_power %.0f W; energy will come from %s; CPU energy from %s\n",
               bso_monitor_max_power_w(m), bso_energy_source_name(bso_monitor_source(m)),
               bso_energy_source_name(bso_monitor_cpu_source(m)));
    }
    bso_monitor_free(m);
    return 0;
}

static int cmd_measure(struct ctx *c)
{
    if (c->argc < 1)
        return die("expected -- CMD [ARGS...]"), 2;
    bso_monitor *m;
    if (open_monitor(&m))
        return 1;
    if (bso_monitor_begin(m, "measure") < 0) {
        die("%s", bso_monitor_errmsg(m));
        bso_monitor_free(m);
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        execvp(c->argv[0], c->argv);
        fprintf(stderr, "bso: cannot run %s: %s\n", c->argv[0], strerror(errno));
        _exit(127);
    }
    int wstatus = 0;
    /* The command gets the terminal's signals; we wait for it either way. */
    signal(SIGINT, SIG_IGN);
    while (pid > 0 && waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    struct bso_measurement w;
    int rc = bso_monitor_end(m, "measure", &w);
    if (rc < 0) {
        die("%s", bso_monitor_errmsg(m));
        bso_monitor_free(m);
        return 1;
    }
    if (c->json) {
        json_t *gpu = json_array();
        for (size_t i = 0; i < w.n_gpus; i++)
            json_array_append_new(gpu,
                                  json_pack("{s:f, s:s}", "energy_j", w.gpu_energy_j[i], "source",
                                            bso_energy_source_name(w.gpu_source[i])));
        json_t *o = json_pack("{s:f, s:f, s:s, s:b, s:o, s:f, s:s}", "time_s", w.time_s, "energy_j",
                              w.total_energy_j, "source", bso_energy_source_name(w.source),
                              "estimated", w.estimated, "gpus", gpu, "cpu_energy_j", w.cpu_energy_j,
                              "cpu_source", bso_energy_source_name(w.cpu_source));
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fprintf(stderr, "%s\n", text);
        free(text);
        json_decref(o);
    } else {
        fprintf(stderr, "bso: %.3f s, %.1f J (%s)\n", w.time_s, w.total_energy_j,
                w.estimated ? "estimate: declared power x time" : bso_energy_source_name(w.source));
    }
    bso_monitor_free(m);
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    return 128 + (WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
}

static int cmd_help(struct ctx *c);

static const struct command commands[] = {
    {"jobs", 0, true, "", "list the server's jobs", cmd_jobs},
    {"show", 1, true, "JOB",
     "a job's stage, best batch size so far, and what the policy knows of each size", cmd_show},
    {"trials", 1, true, "JOB", "every trial of a job", cmd_trials},
    {"register", 1, true, "SPEC.json", "register a job from a JSON spec (- reads standard input)",
     cmd_register},
    {"next", 1, true, "JOB", "ask for the batch size of a new trial", cmd_next},
    {"report", -1, true,
     "JOB BATCH_SIZE TRIAL TIME_S ENERGY_J METRIC EPOCH [SOURCE] | JOB --html FILE",
     "report a trial's cumulative time and energy after an evaluation; with --html, the "
     "job's dashboard page as one self-contained file",
     cmd_report},
    {"end", 3, true, "JOB BATCH_SIZE TRIAL", "end a trial that will not report", cmd_end},
    {"delete", 1, true, "JOB", "delete a job and its history", cmd_delete},
    {"reset", 1, true, "JOB", "forget what a job learned: it explores again (keeps its spec)",
     cmd_reset},
    {"transfer", 2, true, "OLD NEW",
     "start job NEW (the same workload on other hardware) from what job OLD learnt of each "
     "batch size's epochs",
     cmd_transfer},
    {"probe", 1, true, "JOB",
     "the job's device profile (bso.probe): which sizes fit, samples/s and J/sample, with bars",
     cmd_probe},
    {"gpus", -1, false, "[--restore-power]",
     "the GPUs the monitor sees and where energy will come from; --restore-power puts back "
     "the power limits of tuning runs that were killed",
     cmd_gpus},
    {"measure", -1, false, "-- CMD [ARGS...]",
     "run a command and print its time and energy (to stderr)", cmd_measure},
    {"help", -1, false, "[CMD]", "this text", cmd_help},
};
#define N_COMMANDS (sizeof commands / sizeof *commands)

static void usage_of(const struct command *cmd, FILE *f)
{
    fprintf(f, "usage: bso [--server URL] [--token T] [--cacert PEM] [--json] %s %s\n  %s\n",
            cmd->name, cmd->args, cmd->help);
}

static int cmd_help(struct ctx *c)
{
    if (c->argc == 1) {
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (strcmp(commands[i].name, c->argv[0]) == 0) {
                usage_of(&commands[i], stdout);
                return 0;
            }
        return die("no command '%s' (see bso help)", c->argv[0]), 2;
    }
    printf("usage: bso [--server URL] [--token T] [--cacert PEM] [--json] COMMAND [ARGS...]\n\n"
           "The command line of BSO, the batch size optimizer for recurring training jobs.\n"
           "The server is --server, or BSO_SERVER_URL, or http://127.0.0.1:8000. The API token\n"
           "is --token or BSO_TOKEN; an https server's CA certificate --cacert or BSO_CACERT.\n\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        printf("  %-9s %-52s %s\n", commands[i].name, commands[i].args, commands[i].help);
    printf("\n`bso COMMAND --help` explains one command.\n");
    return 0;
}

int main(int argc, char **argv)
{
    struct ctx c = {.server = getenv("BSO_SERVER_URL")};
    const char *token = NULL, *cacert = NULL; /* else libbso reads BSO_TOKEN, BSO_CACERT */
    if (!c.server || !*c.server)
        c.server = "http://127.0.0.1:8000";
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-' && argv[i][2]; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            c.json = true;
        } else if (strcmp(argv[i], "--server") == 0 && i + 1 < argc) {
            c.server = argv[++i];
        } else if (strncmp(argv[i], "--server=", 9) == 0) {
            c.server = argv[i] + 9;
        } else if (strcmp(argv[i], "--token") == 0 && i + 1 < argc) {
            token = argv[++i];
        } else if (strncmp(argv[i], "--token=", 8) == 0) {
            token = argv[i] + 8;
        } else if (strcmp(argv[i], "--cacert") == 0 && i + 1 < argc) {
            cacert = argv[++i];
        } else if (strncmp(argv[i], "--cacert=", 9) == 0) {
            cacert = argv[i] + 9;
        } else if (strcmp(argv[i], "--help") == 0) {
            c.argc = 0;
            return cmd_help(&c);
        } else {
            return die("unknown option '%s' (see bso help)", argv[i]), 2;
        }
    }
    if (i >= argc) {
        cmd_help(&c);
        return 2;
    }
    const struct command *cmd = NULL;
    for (size_t k = 0; k < N_COMMANDS; k++)
        if (strcmp(commands[k].name, argv[i]) == 0)
            cmd = &commands[k];
    if (!cmd)
        return die("no command '%s' (see bso help)", argv[i]), 2;
    c.argc = argc - i - 1;
    c.argv = argv + i + 1;
    for (int k = 0; k < c.argc; k++) {
        if (strcmp(c.argv[k], "--") == 0) { /* measure: everything after -- is the command */
            c.argv += k + 1;
            c.argc -= k + 1;
            break;
        }
        if (strcmp(c.argv[k], "--help") == 0) {
            usage_of(cmd, stdout);
            return 0;
        }
        if (strcmp(c.argv[k], "--json") == 0) { /* accepted after the command too */
            c.json = true;
            memmove(&c.argv[k], &c.argv[k + 1], (size_t)(c.argc - k - 1) * sizeof(char *));
            c.argc--;
            k--;
        }
    }
    if (cmd->nargs >= 0 && c.argc != cmd->nargs) {
        usage_of(cmd, stderr);
        return 2;
    }
    if (cmd->client && bso_client_new(c.server, &c.cl) < 0)
        return die("cannot create a client for '%s'", c.server);
    if (c.cl && ((token && bso_client_set_token(c.cl, token) < 0) ||
                 (cacert && bso_client_set_cacert(c.cl, cacert) < 0))) {
        bso_client_free(c.cl);
        return die("--token or --cacert cannot be used (a line break in the token?)");
    }
    int status = cmd->run(&c);
    bso_client_free(c.cl);
    return status;
}
