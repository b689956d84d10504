/* Prometheus metrics; see metrics.h. */
#include "server/metrics.h"

#include <inttypes.h>
#include <stdatomic.h>

/* Latency bucket bounds (seconds): from a cache hit (~0.1 ms) to a slow fsync. */
static const double bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
#define N_BOUNDS (sizeof bounds / sizeof bounds[0])
#define STATUS_MIN 100
#define STATUS_SLOTS 500 /* 100..599 */

static _Atomic uint64_t requests[BSO_METRICS_ROUTES][STATUS_SLOTS];
static _Atomic uint64_t buckets[BSO_METRICS_ROUTES][N_BOUNDS]; /* not cumulative */
static _Atomic uint64_t latency_ns[BSO_METRICS_ROUTES];
static _Atomic uint64_t db_errors;

void bso_metrics_request(int route, unsigned status, double seconds)
{
    if (route < 0 || route >= BSO_METRICS_ROUTES)
        route = BSO_METRICS_UNROUTED;
    if (status < STATUS_MIN || status >= STATUS_MIN + STATUS_SLOTS)
        status = 500;
    atomic_fetch_add_explicit(&requests[route][status - STATUS_MIN], 1, memory_order_relaxed);
    size_t b = 0;
    while (b < N_BOUNDS && seconds > bounds[b])
        b++;
    if (b < N_BOUNDS) /* beyond the last bound only +Inf counts it: the total */
        atomic_fetch_add_explicit(&buckets[route][b], 1, memory_order_relaxed);
    const double ns = seconds > 0 ? seconds * 1e9 : 0;
    atomic_fetch_add_explicit(&latency_ns[route], ns < 1.8e19 ? (uint64_t)ns : 0,
                              memory_order_relaxed);
}

void bso_metrics_db_error(void)
{
    atomic_fetch_add_explicit(&db_errors, 1, memory_order_relaxed);
}

static uint64_t load(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

static void route_labels(int slot, int (*label_of)(int, const char **, const char **),
                         const char **route, const char **method)
{
    if (slot == BSO_METRICS_UNROUTED) {
        *route = "unmatched";
        *method = "";
    } else if (!label_of(slot, route, method)) {
        *route = NULL;
    }
}

void bso_metrics_write(FILE *f, int (*label_of)(int slot, const char **route, const char **method),
                       const struct bso_metrics_db *db, const char *version, const char *database)
{
    fputs("# HELP bso_http_requests_total HTTP requests answered, by route, method and status.\n"
          "# TYPE bso_http_requests_total counter\n",
          f);
    for (int r = 0; r < BSO_METRICS_ROUTES; r++) {
        const char *route, *method;
        route_labels(r, label_of, &route, &method);
        for (int s = 0; route && s < STATUS_SLOTS; s++) {
            const uint64_t n = load(&requests[r][s]);
            if (n)
                fprintf(f,
                        "bso_http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} "
                        "%" PRIu64 "\n",
                        route, method, s + STATUS_MIN, n);
        }
    }
    fputs("# HELP bso_http_request_duration_seconds Time from a request's first byte to its "
          "answer, by route.\n"
          "# TYPE bso_http_request_duration_seconds histogram\n",
          f);
    for (int r = 0; r < BSO_METRICS_ROUTES; r++) {
        const char *route, *method;
        route_labels(r, label_of, &route, &method);
        uint64_t total = 0;
        for (int s = 0; s < STATUS_SLOTS; s++)
            total += load(&requests[r][s]);
        if (!route || total == 0)
            continue;
        uint64_t cumulative = 0;
        for (size_t b = 0; b < N_BOUNDS; b++) {
            cumulative += load(&buckets[r][b]);
            fprintf(f,
                    "bso_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\","
                    "le=\"%g\"} %" PRIu64 "\n",
                    route, method, bounds[b], cumulative);
        }
        fprintf(f,
                "bso_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\",le=\"+Inf\"} "
                "%" PRIu64 "\n"
                "bso_http_request_duration_seconds_sum{route=\"%s\",method=\"%s\"} %.9f\n"
                "bso_http_request_duration_seconds_count{route=\"%s\",method=\"%s\"} %" PRIu64 "\n",
                route, method, total, route, method, (double)load(&latency_ns[r]) / 1e9, route,
                method, total);
    }
    fprintf(f,
            "# HELP bso_db_errors_total Database operations that failed.\n"
            "# TYPE bso_db_errors_total counter\n"
            "bso_db_errors_total %" PRIu64 "\n",
            load(&db_errors));
    if (db->has_counts) {
        fprintf(f,
                "# HELP bso_jobs Jobs by stage.\n# TYPE bso_jobs gauge\n"
                "bso_jobs{stage=\"Pruning\"} %" PRId64 "\nbso_jobs{stage=\"MAB\"} %" PRId64 "\n"
                "# HELP bso_trials Trials by status.\n# TYPE bso_trials gauge\n"
                "bso_trials{status=\"Dispatched\"} %" PRId64 "\n"
                "bso_trials{status=\"Succeeded\"} %" PRId64 "\n"
                "bso_trials{status=\"Failed\"} %" PRId64 "\n",
                db->jobs[0], db->jobs[1], db->trials[0], db->trials[1], db->trials[2]);
    }
    fprintf(f,
            "# HELP bso_build_info The server's version and database backend.\n"
            "# TYPE bso_build_info gauge\n"
            "bso_build_info{version=\"%s\",database=\"%s\"} 1\n",
            version, database);
}
