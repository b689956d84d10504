/* The per-job record of acknowledged requests; see ledger.h. */
#include "bench/ledger.h"

#include <stdlib.h>
#include <string.h>

#include "bso/error.h"

int bso_ledger_init(struct bso_ledger_job *j)
{
    memset(j, 0, sizeof *j);
    return pthread_mutex_init(&j->lock, NULL) == 0 ? 0 : BSO_ENOMEM;
}

void bso_ledger_free(struct bso_ledger_job *j)
{
    free(j->trials);
    pthread_mutex_destroy(&j->lock);
}

long bso_ledger_add(struct bso_ledger_job *j, int64_t number, int64_t batch_size)
{
    pthread_mutex_lock(&j->lock);
    long slot = -1;
    if (j->n == j->cap) {
        size_t cap = j->cap ? 2 * j->cap : 16;
        struct bso_ledger_trial *t = realloc(j->trials, cap * sizeof *t);
        if (!t)
            goto out;
        j->trials = t;
        j->cap = cap;
    }
    j->trials[j->n] = (struct bso_ledger_trial){.number = number, .batch_size = batch_size};
    slot = (long)j->n++;
out:
    pthread_mutex_unlock(&j->lock);
    return slot;
}

void bso_ledger_report(struct bso_ledger_job *j, long slot, double time, bool finished)
{
    pthread_mutex_lock(&j->lock);
    struct bso_ledger_trial *t = &j->trials[slot];
    t->time = time;
    t->reported = true;
    t->finished = finished;
    pthread_mutex_unlock(&j->lock);
}

void bso_ledger_predict_failed(struct bso_ledger_job *j)
{
    pthread_mutex_lock(&j->lock);
    j->predict_errors++;
    pthread_mutex_unlock(&j->lock);
}
