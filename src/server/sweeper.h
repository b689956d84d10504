/*
 * Trial leases. A dispatched trial whose final report has not come when its lease runs out is
 * failed, as if its client had ended it: the batch size is issued again (and counts towards
 * being infeasible, job.h), where Zeus would wait for it forever. The lease is measured from
 * dispatch: three times the job's longest finished run, never less than --lease-floor, and
 * --lease-default while no run of the job has finished. A thread sweeps every
 * min(60 s, floor / 4); several replicas sweeping together fail a trial once.
 */
#ifndef BSO_SERVER_SWEEPER_H
#define BSO_SERVER_SWEEPER_H

#include "server/config.h"
#include "store/store.h"

#define BSO_LEASE_FACTOR 3.0

struct bso_sweeper;

/* Starts sweeping store (which must outlive it). NULL when the thread cannot start. */
struct bso_sweeper *bso_sweeper_start(struct bso_store *store, const struct bso_config *cfg);
/* Stops and joins the thread. NULL is a no-op. */
void bso_sweeper_stop(struct bso_sweeper *sw);

/* One sweep at wall-clock time `now` (seconds since the epoch): how many trials it failed, or
 * a negative error. For tests and the thread. */
int bso_sweep(struct bso_store *store, const struct bso_config *cfg, double now);

#endif
