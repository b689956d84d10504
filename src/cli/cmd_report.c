/* `bso report`: a trial's progress after an evaluation; with --html, the job's dashboard page
 * as one self-contained file. */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes a script to f with every "</script" made "<\/script", so that it cannot close its
 * <script> element early. */
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

/* JSON text inside a <script>: every '<' written as \u003c, which JSON reads as the same
 * character, so that nothing in the data (a job id or GPU model of "<!--<script>", say) can
 * end the script or change how the HTML parser reads the rest of it. */
static void put_json_inline(FILE *f, const char *json)
{
    for (const char *p = json; *p; p++) {
        if (*p == '<')
            fputs("\\u003c", f);
        else
            fputc(*p, f);
    }
}

/* bso report JOB --html FILE: the dashboard's job page as one self-contained file (its script,
 * style and charting library from the server's /ui, the job's data inlined). */
static int html_report(struct ctx *c, const char *job_id, const char *out_path)
{
    char path[1200];
    cli_job_path(job_id, "", path, sizeof path);
    char *job = cli_fetch(c, path);
    if (!job)
        return 1;
    json_t *trials = json_array();
    char base[1200];
    cli_job_path(job_id, "/trials?limit=1000", base, sizeof base);
    int status = cli_walk_pages(c, base, "trials", trials);
    static const char *const names[] = {"/ui/uPlot.min.css", "/ui/style.css", "/ui/uPlot.min.js",
                                        "/ui/app.js"};
    char *assets[4] = {0};
    for (int i = 0; i < 4 && status == 0; i++)
        if (!(assets[i] = cli_fetch(c, names[i])))
            status = 1;
    char *trials_text = json_dumps(trials, JSON_COMPACT);
    FILE *f = status == 0 ? (strcmp(out_path, "-") == 0 ? stdout : fopen(out_path, "w")) : NULL;
    if (status == 0 && !f)
        status = cli_die("cannot write %s: %s", out_path, strerror(errno));
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
        put_json_inline(f, job);
        fputs(", \"trials\": ", f);
        put_json_inline(f, trials_text ? trials_text : "[]");
        fputs("};\n</script>\n<script>\n", f);
        put_inline(f, assets[3]);
        fputs("\n</script>\n</body>\n</html>\n", f);
        if (f != stdout && fclose(f) != 0)
            status = cli_die("cannot write %s: %s", out_path, strerror(errno));
    }
    free(trials_text);
    for (int i = 0; i < 4; i++)
        free(assets[i]);
    json_decref(trials);
    free(job);
    return status;
}

/* Takes `--samples N --mean-batch-size X` (a run whose batch size changes) out of the
 * arguments; 0, 1 when there is none, or 2 after a message. */
static int progress_flags(struct ctx *c, struct bso_run_progress *p)
{
    int found = 0;
    for (int k = 0; k + 1 < c->argc;) {
        const bool samples = strcmp(c->argv[k], "--samples") == 0;
        if (!samples && strcmp(c->argv[k], "--mean-batch-size") != 0) {
            k++;
            continue;
        }
        if (samples ? cli_parse_i64(c->argv[k + 1], "--samples", &p->samples) < 0
                    : cli_parse_f64(c->argv[k + 1], "--mean-batch-size", &p->mean_batch_size) < 0)
            return 2;
        found |= samples ? 1 : 2;
        memmove(&c->argv[k], &c->argv[k + 2], (size_t)(c->argc - k - 2) * sizeof(char *));
        c->argc -= 2;
    }
    if (found == 0)
        return 1;
    if (found != 3)
        return cli_die("--samples and --mean-batch-size go together"), 2;
    return 0;
}

int cmd_report(struct ctx *c)
{
    if (c->argc == 3 && strcmp(c->argv[1], "--html") == 0)
        return html_report(c, c->argv[0], c->argv[2]);
    struct bso_run_progress progress = {0};
    const int flags = progress_flags(c, &progress);
    if (flags == 2)
        return 2;
    if (c->argc != 7 && c->argc != 8)
        return cli_die(
                   "expected JOB BATCH_SIZE TRIAL TIME_S ENERGY_J METRIC EPOCH [SOURCE], or JOB "
                   "--html FILE"),
               2;
    int64_t bs, n, epoch;
    double t, e, metric;
    if (cli_parse_i64(c->argv[1], "BATCH_SIZE", &bs) < 0 ||
        cli_parse_i64(c->argv[2], "TRIAL", &n) < 0 || cli_parse_f64(c->argv[3], "TIME_S", &t) < 0 ||
        cli_parse_f64(c->argv[4], "ENERGY_J", &e) < 0 ||
        cli_parse_f64(c->argv[5], "METRIC", &metric) < 0 ||
        cli_parse_i64(c->argv[6], "EPOCH", &epoch) < 0)
        return 2;
    bso_client *cl = c->cl;
    struct bso_report_answer a;
    const char *source = c->argc == 8 ? c->argv[7] : NULL;
    int status =
        cli_check(cl, bso_client_report_progress(cl, c->argv[0], bs, n, t, e, metric, epoch, source,
                                                 flags == 0 ? &progress : NULL, &a));
    if (status == 0) {
        if (c->json)
            cli_print_body(cl);
        else
            printf("%s%s\n",
                   a.stop_train ? (a.converged ? "stop: converged. " : "stop: failed. ")
                                : "continue. ",
                   a.message);
    }
    return status;
}
