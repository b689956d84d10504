/*
 * The server's Prometheus metrics (GET /metrics, docs/operations.md): requests by route, method
 * and status, latency histograms by route, database errors, build info, and, read from the
 * database at scrape time, jobs by stage and trials by status. Counters are relaxed atomics:
 * recording a request costs a few atomic adds and no lock.
 */
#ifndef BSO_SERVER_METRICS_H
#define BSO_SERVER_METRICS_H

#include <stdint.h>
#include <stdio.h>

/* Route slots: each of the route table's entries, and one for requests that matched none (or
 * were answered before routing: 408, 413, 414). */
#define BSO_METRICS_ROUTES 32
#define BSO_METRICS_UNROUTED (BSO_METRICS_ROUTES - 1)

/* Records one answered request on route slot `route` taking `seconds`. */
void bso_metrics_request(int route, unsigned status, double seconds);
/* Counts one failed database operation. */
void bso_metrics_db_error(void);

/* What a scrape reads from the database; have_db false when it could not be read. */
struct bso_metrics_db {
    int has_counts;
    int64_t jobs[2];   /* by enum bso_stage */
    int64_t trials[3]; /* by enum bso_trial_status */
};

/* Writes every series in Prometheus text format (0.0.4) to f. label_of(slot) names a route
 * slot's route and method ("/jobs/{job_id}", "GET"), or returns 0 for an unused slot. */
void bso_metrics_write(FILE *f, int (*label_of)(int slot, const char **route, const char **method),
                       const struct bso_metrics_db *db, const char *version, const char *database);

#endif
