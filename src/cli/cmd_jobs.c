/* `bso jobs`: the server's jobs, one line each. */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>

/* One job, with its policy ("-" from a server too old to say); a job whose target is out of
 * reach (no size is expected to reach it within max_epochs: `bso show` says more) is marked
 * after its GPU. */
static void job_row(json_t *j)
{
    char cost[32];
    cli_fmt_num(cost, sizeof cost, json_object_get(j, "min_cost"), 1);
    printf("%-32s %-8s %-6s %7" PRId64 " %14s %10" PRId64 "  %s%s\n", cli_str(j, "job_id"),
           cli_stage(cli_str(j, "stage"), cli_str(j, "policy"), true), cli_str(j, "policy"),
           (int64_t)json_integer_value(json_object_get(j, "trials")), cost,
           (int64_t)json_integer_value(json_object_get(j, "min_cost_batch_size")),
           cli_str(j, "gpu_model"),
           json_is_object(json_object_get(j, "target_out_of_reach")) ? "  (target out of reach)"
                                                                     : "");
}

int cmd_jobs(struct ctx *c)
{
    char header[160];
    snprintf(header, sizeof header, "%-32s %-8s %-6s %7s %14s %10s  %s\n", "JOB", "STAGE", "POLICY",
             "TRIALS", "MIN COST", "BEST BS", "GPU");
    return cli_each_row(c, "/jobs?limit=1000", "jobs", header, job_row);
}
