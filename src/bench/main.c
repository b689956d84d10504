/*
 * bso-bench: a load generator for any server that speaks Zeus's BSO API (bso-server, or Zeus's
 * own). J jobs, C concurrent clients; each client repeatedly takes a recurrence of one of its
 * jobs: ask for a batch size, report epoch by epoch until the server says stop, end the trial.
 * Prints throughput, latency percentiles (overall and per endpoint), errors, and the server's
 * peak RSS and CPU seconds when given its PID. See bench/README.md.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/api.h"
#include "bench/driver.h"
#include "bench/http.h"
#include "bench/latency.h"
#include "bench/ledger.h"
#include "bench/policy_cpu.h"
#include "bench/procstat.h"
#include "bench/verify.h"
#include "bench/cmdline.h"
#include "bench/workload.h"
#include "bso/error.h"
#include "core/report.h"

static const char *const ep_names[BSO_EP_N] = {"register", "predict", "report", "end_trial"};

#define MAX_URLS 16

struct options {
    const char *urls[MAX_URLS]; /* replicas of one service: clients spread over them */
    int n_urls;
    size_t jobs;
    int concurrency, threads;
    double duration_s;
    int64_t epochs;
    enum bso_bench_mode mode;
    const char *policy; /* NULL: the server's default */
    uint64_t seed;
    bool json, verify, policy_cpu;
    int sizes; /* batch sizes per job */
    pid_t server_pid;
};

static int usage(FILE *f)
{
    fprintf(f,
            "usage: bso-bench --url URL [--url URL...] [--jobs J] [--concurrency C]\n"
            "                 [--duration S]\n"
            "                 [--epochs K] [--sizes N] [--only predict|register]\n"
            "                 [--policy bso|zeus] [--seed N] [--json] [--verify]\n"
            "                 [--server-pid PID] [--threads T]\n"
            "       bso-bench --policy-cpu [--sizes N] [--duration S] [--json]\n"
            "\n"
            "Drives a server that speaks Zeus's BSO API with J recurring jobs (default 64) from\n"
            "C concurrent clients (default 8) for S seconds (default 10). Each client repeats\n"
            "recurrences of its jobs: a batch size, reports epoch by epoch (at most K, default\n"
            "10) until the server says stop, then the end of the trial. --only hammers one\n"
            "endpoint instead. Jobs are registered first (timed apart). --policy sends the\n"
            "field (default: the server's default; leave it out for Zeus's server).\n"
            "Prints throughput, latency percentiles overall and per endpoint, and errors; with\n"
            "--server-pid also the server's peak RSS and CPU seconds. --verify reads every job\n"
            "back (BSO's read API) and checks trial numbers and acknowledged reports; it exits\n"
            "1 when an invariant fails or any request failed. Jobs offer N batch sizes\n"
            "(default 8). T threads drive the C clients with epoll (default: one per CPU).\n"
            "Several --url are replicas of one service: client i starts on the i-th (round\n"
            "robin) and moves to the next when its connection fails.\n"
            "--policy-cpu times the policy core itself, in-process, per predict\n"
            "and per report, under each policy, for S seconds of CPU each, in jobs\n"
            "whose epochs change half-way (the calls after the change timed apart).\n");
    return f == stdout ? 0 : 2;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bso-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

static int parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){.jobs = 64,
                          .concurrency = 8,
                          .threads = 0, /* the CPUs', at most one per client */
                          .duration_s = 10,
                          .epochs = 10,
                          .mode = BSO_MODE_MIXED,
                          .seed = 1,
                          .sizes = 8};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return usage(stdout), 1;
        if (strcmp(a, "--json") == 0) {
            o->json = true;
            continue;
        }
        if (strcmp(a, "--verify") == 0) {
            o->verify = true;
            continue;
        }
        if (strcmp(a, "--policy-cpu") == 0) {
            o->policy_cpu = true;
            continue;
        }
        if (i + 1 >= argc)
            return fail("%s needs a value (see --help)", a);
        const char *v = argv[++i];
        double d;
        char *end;
        if (strcmp(a, "--url") == 0) {
            if (o->n_urls == MAX_URLS)
                return fail("at most %d --url", MAX_URLS);
            if (strncmp(v, "http://", 7) != 0)
                return fail("--url must be http://HOST[:PORT], not '%s'", v);
            o->urls[o->n_urls++] = v;
        } else if (strcmp(a, "--jobs") == 0) {
            if (!bso_bench_whole(v, 1, 10000000, &d))
                return fail("--jobs must be a whole number from 1 to 10000000, not '%s'", v);
            o->jobs = (size_t)d;
        } else if (strcmp(a, "--concurrency") == 0) {
            if (!bso_bench_whole(v, 1, 4096, &d))
                return fail("--concurrency must be a whole number from 1 to 4096, not '%s'", v);
            o->concurrency = (int)d;
        } else if (strcmp(a, "--threads") == 0) {
            if (!bso_bench_whole(v, 1, 64, &d))
                return fail("--threads must be a whole number from 1 to 64, not '%s'", v);
            o->threads = (int)d;
        } else if (strcmp(a, "--duration") == 0) {
            o->duration_s = strtod(v, &end);
            if (!*v || *end || !(o->duration_s > 0) || o->duration_s > 86400)
                return fail("--duration must be seconds, more than 0, not '%s'", v);
        } else if (strcmp(a, "--epochs") == 0) {
            if (!bso_bench_whole(v, 1, 1000, &d))
                return fail("--epochs must be a whole number from 1 to 1000, not '%s'", v);
            o->epochs = (int64_t)d;
        } else if (strcmp(a, "--sizes") == 0) {
            if (!bso_bench_whole(v, 1, BSO_BENCH_MAX_SIZES, &d))
                return fail("--sizes must be a whole number from 1 to %d, not '%s'",
                            BSO_BENCH_MAX_SIZES, v);
            o->sizes = (int)d;
        } else if (strcmp(a, "--only") == 0) {
            if (strcmp(v, "predict") == 0)
                o->mode = BSO_MODE_PREDICT;
            else if (strcmp(v, "register") == 0)
                o->mode = BSO_MODE_REGISTER;
            else
                return fail("--only must be predict or register, not '%s'", v);
        } else if (strcmp(a, "--policy") == 0) {
            if (strcmp(v, "bso") != 0 && strcmp(v, "zeus") != 0)
                return fail("--policy must be bso or zeus, not '%s'", v);
            o->policy = v;
        } else if (strcmp(a, "--seed") == 0) {
            if (!bso_bench_whole(v, 0, 1e15, &d))
                return fail("--seed must be a whole number, not '%s'", v);
            o->seed = (uint64_t)d;
        } else if (strcmp(a, "--server-pid") == 0) {
            if (!bso_bench_whole(v, 1, 1e9, &d))
                return fail("--server-pid must be a process id, not '%s'", v);
            o->server_pid = (pid_t)d;
        } else {
            return fail("unknown option '%s' (see --help)", a);
        }
    }
    if (o->policy_cpu)
        return 0; /* in-process: no server */
    if (o->n_urls == 0)
        return fail("--url is required (see --help)");
    if (o->threads == 0) {
        const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o->threads = cpus > 0 ? (int)(cpus < 64 ? cpus : 64) : 1;
    }
    if (o->threads > o->concurrency)
        o->threads = o->concurrency;
    return 0;
}

struct totals {
    struct bso_latency lat[BSO_EP_N], all;
    int64_t errors[BSO_EP_N], requests, n_errors;
};

static void print_text(const struct options *o, const struct totals *t, double elapsed,
                       double reg_elapsed, const struct bso_procstat *ps, bool have_ps,
                       long verified)
{
    printf("bso-bench: %s%s, %zu jobs, %d clients, %.1f s", o->urls[0],
           o->n_urls > 1 ? " and other replicas" : "", o->jobs, o->concurrency, elapsed);
    if (o->mode != BSO_MODE_MIXED)
        printf(", only %s", o->mode == BSO_MODE_PREDICT ? "predict" : "register");
    printf("\n\nthroughput  %.0f requests/s (%" PRId64 " requests, %" PRId64 " errors)\n",
           (double)t->requests / elapsed, t->requests, t->n_errors);
    printf("\n%-10s %9s %9s %9s %9s %9s %9s %7s   (latency in ms)\n", "endpoint", "requests", "p50",
           "p90", "p99", "p99.9", "max", "errors");
    for (int ep = 0; ep <= BSO_EP_N; ep++) {
        const struct bso_latency *l = ep < BSO_EP_N ? &t->lat[ep] : &t->all;
        const int64_t errs = ep < BSO_EP_N ? t->errors[ep] : t->n_errors;
        if (l->n == 0 && errs == 0)
            continue;
        printf("%-10s %9zu %9.3f %9.3f %9.3f %9.3f %9.3f %7" PRId64 "\n",
               ep < BSO_EP_N ? ep_names[ep] : "all", l->n, bso_latency_pct(l, 50),
               bso_latency_pct(l, 90), bso_latency_pct(l, 99), bso_latency_pct(l, 99.9),
               l->n ? l->ms[l->n - 1] : 0.0, errs);
    }
    printf("(registration of the %zu jobs took %.2f s before the timed phase; \"all\" leaves it "
           "out)\n",
           o->jobs, reg_elapsed);
    if (have_ps)
        printf("\nserver      peak RSS %.1f MB, %.2f CPU s during the run (%.1f us per request)\n",
               ps->peak_rss_mb, ps->cpu_s,
               t->requests ? ps->cpu_s / (double)t->requests * 1e6 : 0.0);
    if (o->verify)
        printf("\nverify      %s\n", verified == 0 ? "ok: every invariant holds" : "FAILED");
}

static void json_lat(const struct bso_latency *l)
{
    printf("{\"count\": %zu, \"p50\": %.4f, \"p90\": %.4f, \"p99\": %.4f, \"p999\": %.4f, "
           "\"max\": %.4f}",
           l->n, bso_latency_pct(l, 50), bso_latency_pct(l, 90), bso_latency_pct(l, 99),
           bso_latency_pct(l, 99.9), l->n ? l->ms[l->n - 1] : 0.0);
}

static void print_json(const struct options *o, const struct totals *t, double elapsed,
                       const struct bso_procstat *ps, bool have_ps, long verified)
{
    printf("{\"url\": \"%s\", \"jobs\": %zu, \"concurrency\": %d, \"duration_s\": %.3f, "
           "\"requests\": %" PRId64 ", \"throughput_rps\": %.1f, \"latency_ms\": ",
           o->urls[0], o->jobs, o->concurrency, elapsed, t->requests,
           (double)t->requests / elapsed);
    json_lat(&t->all);
    printf(", \"endpoints\": {");
    bool first = true;
    for (int ep = 0; ep < BSO_EP_N; ep++) {
        if (t->lat[ep].n == 0 && t->errors[ep] == 0)
            continue;
        printf("%s\"%s\": {\"errors\": %" PRId64 ", \"latency_ms\": ", first ? "" : ", ",
               ep_names[ep], t->errors[ep]);
        json_lat(&t->lat[ep]);
        printf("}");
        first = false;
    }
    printf("}, \"errors\": %" PRId64, t->n_errors);
    if (have_ps)
        printf(", \"server_peak_rss_mb\": %.2f, \"server_cpu_s\": %.3f", ps->peak_rss_mb,
               ps->cpu_s);
    if (o->verify)
        printf(", \"verify_problems\": %ld", verified);
    printf("}\n");
}

int main(int argc, char **argv)
{
    struct options opt;
    int rc = parse(argc, argv, &opt);
    if (rc)
        return rc == 1 ? 0 : rc;

    struct {
        struct bso_bench_sizes sizes;
        struct bso_bench_job *jobs;
        struct bso_ledger_job *ledgers;
    } sh = {0};
    bso_bench_sizes_init(&sh.sizes, opt.sizes);
    if (opt.policy_cpu) {
        rc = bso_policy_cpu(&sh.sizes, opt.epochs, opt.duration_s, opt.seed, opt.json);
        return rc < 0 ? (fail("policy replay failed: %s", bso_strerror(rc)), 1) : 0;
    }
    int status = 1;
    size_t n_ledgers = 0;
    struct bso_http *cl = NULL; /* the probe and --verify */
    struct bso_drive drive = {.urls = opt.urls,
                              .n_urls = opt.n_urls,
                              .clients = opt.concurrency,
                              .threads = opt.threads,
                              .mode = opt.mode,
                              .policy = opt.policy,
                              .n_jobs = opt.jobs};
    struct bso_drive_tally *tallies = calloc((size_t)opt.threads, sizeof *tallies);
    sh.jobs = calloc(opt.jobs, sizeof *sh.jobs);
    sh.ledgers = calloc(opt.jobs, sizeof *sh.ledgers);
    if (!sh.jobs || !sh.ledgers || !tallies || bso_http_new(opt.urls[0], &cl) < 0) {
        fail("out of memory");
        goto out;
    }
    for (; n_ledgers < opt.jobs; n_ledgers++) {
        bso_bench_job_init(&sh.jobs[n_ledgers], &sh.sizes, opt.seed, n_ledgers, opt.epochs);
        if (bso_ledger_init(&sh.ledgers[n_ledgers]) < 0) {
            fail("out of memory");
            goto out;
        }
    }
    drive.jobs = sh.jobs;
    drive.ledgers = sh.ledgers;
    /* A server we cannot reach fails at once, clearly. */
    if (bso_api_get(cl, "/jobs/batch_size?job_id=bso-bench-probe") == BSO_ENET) {
        fail("cannot reach %s: %s", opt.urls[0], bso_http_errmsg(cl));
        goto out;
    }

    struct bso_procstat ps0 = {0}, ps1 = {0};
    const bool have_ps = opt.server_pid > 0 && bso_procstat_read(opt.server_pid, &ps0) == 0;
    if (opt.server_pid > 0 && !have_ps) {
        fail("cannot read /proc/%d (is the server running?)", (int)opt.server_pid);
        goto out;
    }

    const double reg_start = bso_bench_now();
    char why[256];
    if (bso_drive_start(&drive, tallies, why, sizeof why) < 0) {
        fail("%s", why);
        goto out;
    }
    /* The timed phase starts when every job is registered. */
    while (atomic_load(&drive.registered) < opt.jobs)
        usleep(100);
    const double start = bso_bench_now(), reg_elapsed = start - reg_start;
    if (have_ps)
        bso_procstat_read(opt.server_pid, &ps0);
    atomic_store(&drive.timed, true);
    struct timespec nap = {(time_t)opt.duration_s,
                           (long)((opt.duration_s - floor(opt.duration_s)) * 1e9)};
    nanosleep(&nap, NULL);
    atomic_store(&drive.stop, true);
    const double elapsed = bso_bench_now() - start;
    if (have_ps)
        bso_procstat_read(opt.server_pid, &ps1);
    struct bso_procstat ps = {.peak_rss_mb = ps1.peak_rss_mb, .cpu_s = ps1.cpu_s - ps0.cpu_s};
    bso_drive_join(&drive);

    struct totals t = {0};
    bool void_run = false;
    for (int i = 0; i < opt.threads; i++) {
        void_run |= tallies[i].failed;
        for (int ep = 0; ep < BSO_EP_N; ep++) {
            if (bso_latency_merge(&t.lat[ep], &tallies[i].lat[ep]) < 0 ||
                (ep != BSO_EP_REGISTER && bso_latency_merge(&t.all, &tallies[i].lat[ep]) < 0))
                void_run = true;
            t.errors[ep] += tallies[i].errors[ep];
            if (ep != BSO_EP_REGISTER || opt.mode == BSO_MODE_REGISTER) {
                t.requests += (int64_t)tallies[i].lat[ep].n;
                t.n_errors += tallies[i].errors[ep];
            }
            bso_latency_free(&tallies[i].lat[ep]);
        }
        if (tallies[i].first_error[0])
            fprintf(stderr, "bso-bench: client thread %d: first error: %s\n", i,
                    tallies[i].first_error);
    }
    if (opt.mode == BSO_MODE_REGISTER)
        bso_latency_merge(&t.all, &t.lat[BSO_EP_REGISTER]);
    if (void_run) {
        fail("out of memory during the run");
        goto free_totals;
    }
    for (int ep = 0; ep < BSO_EP_N; ep++)
        bso_latency_sort(&t.lat[ep]);
    bso_latency_sort(&t.all);

    long verified = 0;
    if (opt.verify) {
        /* Read back through a replica that still answers. */
        for (int u = 0; u < opt.n_urls; u++) {
            struct bso_http *h;
            if (bso_http_new(opt.urls[u], &h) < 0)
                continue;
            if (bso_api_get(h, "/healthz") == 0) {
                bso_http_free(cl);
                cl = h;
                break;
            }
            bso_http_free(h);
        }
        verified = bso_verify(cl, sh.jobs, sh.ledgers, opt.jobs, stderr);
        if (verified < 0) {
            fprintf(stderr, "bso-bench: verify: cannot read the jobs back: %s\n",
                    bso_api_errmsg(cl, (int)verified, why, sizeof why));
        }
    }
    if (opt.json)
        print_json(&opt, &t, elapsed, &ps, have_ps, verified);
    else
        print_text(&opt, &t, elapsed, reg_elapsed, &ps, have_ps, verified);

    status = opt.verify && (verified != 0 || t.n_errors > 0 || t.errors[BSO_EP_REGISTER]) ? 1 : 0;
free_totals:
    for (int ep = 0; ep < BSO_EP_N; ep++)
        bso_latency_free(&t.lat[ep]);
    bso_latency_free(&t.all);
out:
    bso_http_free(cl);
    for (size_t k = 0; k < n_ledgers; k++)
        bso_ledger_free(&sh.ledgers[k]);
    free(sh.ledgers);
    free(sh.jobs);
    free(tallies);
    return status;
}
