/*
 * What bso-bench was told by the server, per job, for --verify: every trial it was given and
 * the last report the server acknowledged for each. Shared by the worker threads.
 */
#ifndef BSO_BENCH_LEDGER_H
#define BSO_BENCH_LEDGER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bso_ledger_trial {
    int64_t number, batch_size;
    double time;   /* cumulative time of the last acknowledged report */
    bool reported; /* some report was acknowledged */
    bool finished; /* the server said stop (its final report) */
};

struct bso_ledger_job {
    pthread_mutex_t lock;
    struct bso_ledger_trial *trials; /* in the order they were given, owned */
    size_t n, cap;
    int64_t predict_errors; /* predicts that failed: the server may have made a trial anyway */
};

/* 0, or BSO_ENOMEM. */
int bso_ledger_init(struct bso_ledger_job *j);
void bso_ledger_free(struct bso_ledger_job *j);

/* Records a trial the server gave; returns its slot, or -1 out of memory. */
long bso_ledger_add(struct bso_ledger_job *j, int64_t number, int64_t batch_size);

/* Records an acknowledged report for the trial in slot. */
void bso_ledger_report(struct bso_ledger_job *j, long slot, double time, bool finished);

void bso_ledger_predict_failed(struct bso_ledger_job *j);

#endif
