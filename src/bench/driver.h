/*
 * bso-bench's clients: C keep-alive connections to the server, each one client of the
 * workload, driven by a few threads with epoll. A thread per client would make the load
 * generator itself the noise it measures: on a small machine its threads wait for a core
 * behind one another, and that wait lands in the latencies. Here a thread sends each client's
 * next request the moment its answer is read.
 */
#ifndef BSO_BENCH_DRIVER_H
#define BSO_BENCH_DRIVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/latency.h"
#include "bench/ledger.h"
#include "bench/workload.h"

enum bso_bench_endpoint { BSO_EP_REGISTER, BSO_EP_PREDICT, BSO_EP_REPORT, BSO_EP_END, BSO_EP_N };

/* What the clients do: whole recurrences, or one endpoint over and over. */
enum bso_bench_mode { BSO_MODE_MIXED, BSO_MODE_PREDICT, BSO_MODE_REGISTER };

struct bso_drive_loop;

struct bso_drive {
    /* Set by the caller. Client i starts on urls[i % n_urls] and moves to the next server
     * when its connection fails (replicas of one service). */
    const char *const *urls;
    int n_urls;
    int clients, threads;
    enum bso_bench_mode mode;
    const char *policy; /* sent in registrations; NULL: the server's default */
    const struct bso_bench_job *jobs;
    struct bso_ledger_job *ledgers;
    size_t n_jobs;
    /* Shared with the threads. First the clients register every job; the caller waits until
     * `registered` reaches n_jobs, sets `timed`, and later `stop`: each client then finishes
     * the recurrence it is in (unrecorded) and stops. */
    atomic_size_t next_register;
    atomic_size_t registered; /* registrations answered, well or not */
    atomic_bool timed;
    atomic_bool stop;
    struct bso_drive_loop *loops; /* private */
};

/* What one thread measured. */
struct bso_drive_tally {
    struct bso_latency lat[BSO_EP_N];
    int64_t errors[BSO_EP_N];
    char first_error[256];
    bool failed; /* out of memory: the run is void */
};

/* Starts d->threads threads, writing into tallies[0..threads). 0, or a negative BSO_E* code
 * with the reason in err (nothing is left running then). */
int bso_drive_start(struct bso_drive *d, struct bso_drive_tally *tallies, char *err, size_t cap);
/* Waits for the threads (after d->stop) and frees what start made. */
void bso_drive_join(struct bso_drive *d);

#endif
