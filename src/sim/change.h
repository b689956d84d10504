/*
 * Changes within a recurring job's life, for bso-sim's --change: from a given recurrence on,
 * the data needs more (or fewer) epochs to reach the target at some batch sizes, or every epoch
 * takes longer (the data set grew). Each change turns the job of one phase into the next
 * phase's job; the paths keep their draws (common random numbers), only their epochs or times
 * are scaled.
 *
 *   R:epochs=F[@SIZES]   from recurrence R, epochs-to-target times F (rounded up; a path
 *                        pushed past max_epochs no longer reaches)
 *   R:time=F[@SIZES]     from recurrence R, seconds per epoch times F (energy follows)
 *
 * SIZES picks batch sizes relative to the optimum of the phase before the change (`opt`, the
 * size of least expected cost): <opt, <=opt, opt, >=opt, >opt; or a range A-B of batch sizes;
 * or all (the default). Several changes may share a recurrence; they apply in the order given.
 */
#ifndef BSO_SIM_CHANGE_H
#define BSO_SIM_CHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/traces.h"

#define SIM_MAX_CHANGES 16

enum sim_change_kind { SIM_CHANGE_EPOCHS, SIM_CHANGE_TIME };

/* Which sizes a change touches. */
enum sim_change_sizes {
    SIM_SIZES_ALL,
    SIM_SIZES_BELOW_OPT, /* <opt */
    SIM_SIZES_UPTO_OPT,  /* <=opt */
    SIM_SIZES_OPT,       /* opt */
    SIM_SIZES_FROM_OPT,  /* >=opt */
    SIM_SIZES_ABOVE_OPT, /* >opt */
    SIM_SIZES_RANGE,     /* lo..hi */
};

struct sim_change {
    int64_t recurrence; /* 1-based: the first recurrence that sees the change */
    int kind;           /* enum sim_change_kind */
    double factor;
    int sizes; /* enum sim_change_sizes */
    int64_t lo, hi;
};

struct sim_changes {
    struct sim_change items[SIM_MAX_CHANGES];
    size_t n;
};

/* Adds the changes of one --change value (several may be separated by ';'). 0, or -1 with a
 * reason in err. */
int sim_change_parse(const char *text, struct sim_changes *out, char *err, size_t errcap);

/* The recurrences at which a new phase starts, ascending and distinct (at most
 * SIM_MAX_CHANGES); returns how many. */
size_t sim_change_points(const struct sim_changes *c, int64_t *points);

/* Applies the changes starting at recurrence r to *job, in place; the optimum they are relative
 * to is job's before them. */
void sim_change_apply(const struct sim_changes *c, int64_t r, double eta, bool jit,
                      struct sim_job *job);

#endif
