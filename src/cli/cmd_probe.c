/* `bso probe JOB [PROFILE.json]`: the job's device profile (which sizes fit, samples/s, J/sample)
 * with bars; with a file (- reads standard input), stores that profile first. */
#include "cli/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Prints a profile (the server's "profile" array) as a table with bars for samples/s and joules
 * per sample, or as JSON. */
static void print_profile(const struct ctx *c, const char *job_id, json_t *profile)
{
    json_t *e;
    if (c->json) {
        char *text = json_dumps(profile, JSON_COMPACT);
        puts(text ? text : "[]");
        free(text);
        return;
    }
    if (json_array_size(profile) == 0) {
        printf("job %s has no profile yet: run bso.probe in the training script and post it "
               "(docs/client.md), or bso probe %s PROFILE.json\n",
               job_id, job_id);
        return;
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
        cli_fmt_num(sps, sizeof sps, json_object_get(e, "samples_per_s"), 1);
        cli_fmt_num(jps, sizeof jps, json_object_get(e, "joules_per_sample"), 4);
        if (json_is_number(peak))
            snprintf(mem, sizeof mem, "%.1f", json_number_value(peak) / 1048576.0);
        else
            snprintf(mem, sizeof mem, "-");
        bar(b1, sizeof b1, json_number_value(json_object_get(e, "samples_per_s")), max_sps, 20);
        bar(b2, sizeof b2, json_number_value(json_object_get(e, "joules_per_sample")), max_jps, 20);
        printf("%10" PRId64 " %5s %12s %12s %12s  %-20s %-20s %s\n",
               (int64_t)json_integer_value(json_object_get(e, "batch_size")),
               json_is_true(json_object_get(e, "feasible")) ? "yes" : "no", sps, jps, mem, b1, b2,
               cli_str(e, "device"));
    }
}

/* bso probe JOB [PROFILE.json]: the job's device profile (POST /jobs/ID/profile, as bso.probe
 * makes it); with a file, that profile is stored first (a probe run elsewhere, or the new GPU's
 * before a moved job's first run), and the server's answer is what prints. */
int cmd_probe(struct ctx *c)
{
    if (c->argc < 1 || c->argc > 2)
        return cli_die("expected JOB, or JOB PROFILE.json (- reads standard input)"), 2;
    bso_client *cl = c->cl;
    char path[900];
    int status;
    if (c->argc == 2) {
        char *body = cli_read_file(c->argv[1]);
        if (!body)
            return cli_die("cannot read %s: %s", c->argv[1], strerror(errno));
        cli_job_path(c->argv[0], "/profile", path, sizeof path);
        status = cli_check(cl, bso_client_post(cl, path, body));
        free(body);
    } else {
        cli_job_path(c->argv[0], "", path, sizeof path);
        status = cli_check(cl, bso_client_get(cl, path));
    }
    if (status)
        return status;
    json_t *answer = json_loads(bso_client_body(cl), 0, NULL);
    print_profile(c, c->argv[0], json_object_get(answer, "profile"));
    json_decref(answer);
    return 0;
}
