/* libFuzzer target for the trace CSVs bso-sim reads: the input holds up to three files,
 * separated by NUL bytes (summary_train.csv, summary_power_fuzz.csv, a workloads CSV). No
 * input may crash the readers; a loaded job's batch sizes are ascending and within bounds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/traces.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const PARTS[] = {"summary_train.csv", "summary_power_fuzz.csv", "workloads.csv"};
static char scratch_dir[64];

/* Removes the scratch directory when the fuzzer exits, so that runs leave nothing in /tmp. */
static void remove_scratch(void)
{
    char path[128];
    for (size_t i = 0; i < sizeof PARTS / sizeof *PARTS; i++) {
        snprintf(path, sizeof path, "%s/%s", scratch_dir, PARTS[i]);
        unlink(path);
    }
    rmdir(scratch_dir);
}

static const char *scratch(void)
{
    if (!scratch_dir[0]) {
        snprintf(scratch_dir, sizeof scratch_dir, "/tmp/bso-fuzz-traces-XXXXXX");
        if (!mkdtemp(scratch_dir))
            abort();
        atexit(remove_scratch);
    }
    return scratch_dir;
}

/* Writes the next NUL-terminated part of [*p, end) into dir/name. */
static void write_part(const char *dir, const char *name, const uint8_t **p, const uint8_t *end)
{
    const uint8_t *stop = memchr(*p, 0, (size_t)(end - *p));
    if (!stop)
        stop = end;
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    fwrite(*p, 1, (size_t)(stop - *p), f);
    fclose(f);
    *p = stop < end ? stop + 1 : end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = scratch();
    const uint8_t *p = data, *end = data + size;
    for (size_t i = 0; i < sizeof PARTS / sizeof *PARTS; i++)
        write_part(dir, PARTS[i], &p, end);
    char err[512], path[128];
    struct sim_job *job = malloc(sizeof *job);
    struct sim_workload ws[8];
    if (!job)
        return 0;
    size_t n;
    const struct sim_workload *builtin = sim_builtin_workloads(&n);
    snprintf(path, sizeof path, "%s/%s", dir, PARTS[2]);
    const int k = sim_read_workloads(path, ws, 8, err, sizeof err);
    if (k > 8)
        abort();
    const struct sim_workload *w = k > 0 ? &ws[0] : &builtin[0];
    if (sim_load(dir, "fuzz", w, job, err, sizeof err) == 0) {
        if (job->n_bs > SIM_MAX_BS)
            abort();
        for (size_t i = 0; i + 1 < job->n_bs; i++)
            if (job->bs[i].bs >= job->bs[i + 1].bs)
                abort();
        for (size_t i = 0; i < job->n_bs; i++)
            if (job->bs[i].n_paths > SIM_MAX_PATHS || job->bs[i].n_pl > SIM_MAX_PL)
                abort();
    }
    free(job);
    return 0;
}
