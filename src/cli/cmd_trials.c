/* `bso trials JOB`: every trial of a job, with each epoch's batch size when the run reported it. */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>

static void trial_row(json_t *t)
{
    char tm[32], en[32], co[32];
    cli_fmt_num(tm, sizeof tm, json_object_get(t, "time"), 2);
    cli_fmt_num(en, sizeof en, json_object_get(t, "energy"), 1);
    cli_fmt_num(co, sizeof co, json_object_get(t, "cost"), 1);
    json_t *conv = json_object_get(t, "converged");
    char over_time[256];
    cli_batch_over_time(t, over_time, sizeof over_time);
    printf("%6" PRId64 " %10" PRId64 " %-12s %-10s %10s %12s %12s %-9s %s\n",
           (int64_t)json_integer_value(json_object_get(t, "trial_number")),
           (int64_t)json_integer_value(json_object_get(t, "batch_size")), cli_str(t, "type"),
           cli_str(t, "status"), tm, en, co,
           json_is_boolean(conv) ? (json_is_true(conv) ? "yes" : "no") : "-", over_time);
}

int cmd_trials(struct ctx *c)
{
    char base[1000];
    cli_job_path(c->argv[0], "/trials?limit=1000", base, sizeof base);
    char header[200];
    snprintf(header, sizeof header, "%6s %10s %-12s %-10s %10s %12s %12s %-9s %s\n", "TRIAL",
             "BATCH", "TYPE", "STATUS", "TIME (s)", "ENERGY (J)", "COST", "CONVERGED",
             "BATCH SIZE PER EPOCH");
    return cli_each_row(c, base, "trials", header, trial_row);
}
