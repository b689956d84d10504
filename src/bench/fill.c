/*
 * bso-bench-fill: fills a database with the history of many recurring jobs, fast, for
 * measuring the server at scale (bench/README.md). The jobs are bso-bench's own (same ids
 * and specifications), and each has run T recurrences under the real policy, saved through the
 * real store, so the server finds exactly the state it would have built itself.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/cmdline.h"
#include "bench/workload.h"
#include "bso/error.h"
#include "core/job.h"
#include "core/spec.h"
#include "store/store.h"

#define PER_TRANSACTION 20000 /* trials per commit */

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bso-bench-fill: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

/* Runs the job's recurrences through the policy and saves each trial as the server would;
 * the job's own state (stage, arms, statistics, RNG, minimum) is saved once at the end. */
static int fill_job(struct bso_session *s, const struct bso_bench_job *bj, int policy,
                    int64_t recurrences, int64_t *trials)
{
    struct bso_job job;
    int rc = bso_bench_job_start(&job, bj, policy);
    if (rc == 0)
        rc = bso_session_insert_job(s, &job);
    for (int64_t r = 0; rc == 0 && r < recurrences; r++) {
        struct bso_trial trial;
        unsigned changed, all = 0;
        size_t arm = 0;
        if ((rc = bso_job_predict(&job, &trial, &changed)) < 0)
            break;
        all |= changed;
        if ((rc = bso_session_save(s, &job, BSO_CHANGED_TRIAL, &trial, true, 0)) < 0)
            break;
        const struct bso_bench_run run = bso_bench_run(bj, trial.batch_size, trial.number);
        for (int64_t e = 1; e <= bj->max_epochs; e++) {
            const struct bso_report rep = bso_bench_report(&run, e);
            struct bso_decision d;
            if (bso_job_report(&job, &trial, &rep, &d, &changed, &arm) < 0)
                break; /* a late pruning trial: Zeus refuses it, the run just ends */
            all |= changed;
            if (changed & BSO_CHANGED_ARM)
                rc = bso_session_save(s, &job, BSO_CHANGED_ARM, &trial, false, arm);
            if (rc == 0 && (changed & BSO_CHANGED_STATS))
                rc = bso_session_save(s, &job, BSO_CHANGED_STATS, &trial, false, arm);
            if (rc < 0 || d.stop_train)
                break;
        }
        unsigned ended = 0;
        size_t stat = 0;
        if (rc == 0 && trial.status == BSO_TRIAL_DISPATCHED)
            bso_job_end_trial(&job, &trial, &ended, &stat);
        if (rc == 0)
            rc = bso_session_save(
                s, &job, BSO_CHANGED_TRIAL | (all & BSO_CHANGED_ARMS) | (ended & BSO_CHANGED_STATS),
                &trial, false, stat);
        (*trials)++;
    }
    if (rc == BSO_EPRUNED)
        rc = 0; /* every size failed: the job's history simply ends there */
    bso_job_clear(&job);
    return rc;
}

int main(int argc, char **argv)
{
    const char *db = NULL;
    double jobs = 1000, per_job = 100, sizes_n = 8, epochs = 10, seed = 1;
    int policy = BSO_POLICY_BSO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            printf("usage: bso-bench-fill --database URL [--jobs N] [--trials-per-job T]\n"
                   "                      [--sizes N] [--epochs K] [--seed S] "
                   "[--policy bso|zeus]\n\n"
                   "Creates bso-bench's jobs (same ids and specifications as `bso-bench --jobs N\n"
                   "--sizes N --epochs K --seed S`) with T recurrences of history each, run\n"
                   "through the real policy and saved through the real store.\n");
            return 0;
        }
        if (i + 1 >= argc)
            return fail("%s needs a value (see --help)", a);
        const char *v = argv[++i];
        if (strcmp(a, "--database") == 0)
            db = v;
        else if (strcmp(a, "--jobs") == 0 && bso_bench_whole(v, 1, 1e7, &jobs))
            continue;
        else if (strcmp(a, "--trials-per-job") == 0 && bso_bench_whole(v, 0, 1e6, &per_job))
            continue;
        else if (strcmp(a, "--sizes") == 0 && bso_bench_whole(v, 1, BSO_BENCH_MAX_SIZES, &sizes_n))
            continue;
        else if (strcmp(a, "--epochs") == 0 && bso_bench_whole(v, 1, 1000, &epochs))
            continue;
        else if (strcmp(a, "--seed") == 0 && bso_bench_whole(v, 0, 1e15, &seed))
            continue;
        else if (strcmp(a, "--policy") == 0 && bso_policy_parse(v) >= 0)
            policy = bso_policy_parse(v);
        else
            return fail("bad option or value: %s %s (see --help)", a, v);
    }
    if (!db)
        return fail("--database is required (see --help)");

    struct bso_store *store;
    struct bso_session *s;
    char err[512];
    const struct bso_store_options opt = {.durability = BSO_DURABILITY_NORMAL};
    if (bso_store_open(db, &opt, &store, err, sizeof err) < 0)
        return fail("%s", err), 1;
    if (bso_store_session(store, &s) < 0)
        return fail("cannot open a session"), 1;
    struct bso_bench_sizes sizes;
    bso_bench_sizes_init(&sizes, (int)sizes_n);
    const double start = bso_bench_now();
    int64_t trials = 0, since_commit = 0;
    int rc = bso_session_begin_write(s, NULL);
    for (size_t k = 0; rc == 0 && k < (size_t)jobs; k++) {
        struct bso_bench_job bj;
        bso_bench_job_init(&bj, &sizes, (uint64_t)seed, k, (int64_t)epochs);
        const int64_t before = trials;
        rc = fill_job(s, &bj, policy, (int64_t)per_job, &trials);
        since_commit += trials - before;
        if (rc == 0 && since_commit >= PER_TRANSACTION) {
            rc = bso_session_commit(s);
            if (rc == 0)
                rc = bso_session_begin_write(s, NULL);
            since_commit = 0;
            fprintf(stderr, "\r%zu jobs, %" PRId64 " trials, %.0f s", k + 1, trials,
                    bso_bench_now() - start);
        }
    }
    if (rc == 0)
        rc = bso_session_commit(s);
    else
        bso_session_rollback(s);
    if (rc < 0)
        fprintf(stderr, "\nbso-bench-fill: %s\n", bso_session_errmsg(s));
    else
        fprintf(stderr, "\r%.0f jobs, %" PRId64 " trials in %.1f s\n", jobs, trials,
                bso_bench_now() - start);
    bso_session_release(s);
    bso_store_close(store);
    return rc < 0 ? 1 : 0;
}
