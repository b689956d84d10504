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
 *   R:gpu=NAME           from recurrence R, the job runs on another GPU (its power trace):
 *                        a new job as a Zeus client registers it, started afresh or from the
 *                        old job's epochs (bso-sim --move)
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

#define SIM_MAX_CHANGES 64 /* per replay: a drift in small steps, one every recurrence or so */

enum sim_change_kind { SIM_CHANGE_EPOCHS, SIM_CHANGE_TIME, SIM_CHANGE_GPU };

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
    char gpu[32]; /* SIM_CHANGE_GPU */
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
 * to is job's before them. A move to another GPU loads the workload's trace for it from
 * traces_dir first. 0, or -1 with a reason in err. */
int sim_change_apply(const struct sim_changes *c, int64_t r, double eta, bool jit,
                     const char *traces_dir, struct sim_job *job, char *err, size_t errcap);
/* Whether a change at recurrence r moves the job to another GPU. */
bool sim_change_moves(const struct sim_changes *c, int64_t r);

#endif
