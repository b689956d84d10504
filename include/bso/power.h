/*
 * libbso: choosing each training GPU's power limit together with the batch size.
 *
 * During the first epoch of a batch size the job has not profiled yet, a tuner steps the
 * monitor's GPUs through a few power limits (from the top of their allowed range down), skips
 * a warm-up after each change, measures throughput (work per second, counted from the steps
 * the training loop reports) and power (the monitor's GPU energy over the window), then sets
 * the limit of least cost per unit of work for the rest of the run:
 *
 *   cost per unit = (eta * power + (1 - eta) * max_power) / throughput
 *
 * which is the job's cost function per unit of work. Limits are restored when the tuner is
 * freed, at process exit, and on a fatal signal (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV,
 * SIGBUS, SIGFPE, SIGABRT, whichever still has its default action when the first limit is
 * changed); every change is also written to a record file (BSO_POWER_RECORD, default
 * /var/tmp/bso-power-limits) so that `bso gpus --restore-power` can undo what a killed process
 * left behind.
 *
 * Setting limits needs root or CAP_SYS_ADMIN. Without it the tuner says so (state
 * BSO_POWER_OFF, errmsg) and changes nothing: the job goes on optimising the batch size only.
 *
 *   bso_power_tuner_new(monitor, &opt, &t, err, sizeof err);
 *   bso_power_tuner_start(t);                    // or _apply(t, limit) when already known
 *   for each step: bso_power_tuner_step(t, batch_size);
 *   bso_power_tuner_result(t, &r);               // once DONE: what to send the server
 *   bso_power_tuner_free(t);                     // restores the original limits
 */
#ifndef BSO_POWER_H
#define BSO_POWER_H

#include <stdbool.h>
#include <stddef.h>

#include "bso/error.h"
#include "bso/monitor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What was measured at one power limit. */
struct bso_power_point {
    double limit_w;       /* the limit of each training GPU, W */
    double samples_per_s; /* throughput: work units (samples, steps, epochs) per second */
    double power_w;       /* the mean power of all the job's GPUs together, W */
};

/* (eta * power_w + (1 - eta) * max_power_w) / samples_per_s; +inf without a throughput. */
BSO_API double bso_power_cost_per_sample(const struct bso_power_point *p, double eta,
                                         double max_power_w);
/* *best gets the index of the point of least cost per unit of work (equal costs: the higher
 * limit). BSO_EINVAL when no point has a throughput, or eta is outside [0, 1], or
 * max_power_w <= 0. The client's tuner and bso-sim's --power jit both choose with this. */
BSO_API int bso_power_choose(const struct bso_power_point *p, size_t n, double eta,
                             double max_power_w, size_t *best);

enum bso_power_state {
    BSO_POWER_IDLE,      /* created; the GPUs run at their original limits */
    BSO_POWER_PROFILING, /* stepping through limits */
    BSO_POWER_DONE,      /* the chosen (or applied) limit is set */
    BSO_POWER_OFF,       /* limits cannot be set here (errmsg says why): batch size only */
};

/* "idle", "profiling", "done", "off". */
BSO_API const char *bso_power_state_name(int state);

#define BSO_POWER_MAX_LIMITS 16

struct bso_power_options {
    double eta;         /* the job's eta_knob, in [0, 1] (default 0.5) */
    double max_power_w; /* the job's max_power on these GPUs; 0: the monitor's (default) */
    int n_limits;       /* limits tried, evenly spread from the top of the range (default 5) */
    double warmup_s;    /* after each change, not measured (default 1 s) */
    double window_s;    /* measured per limit, at least (default 3 s) */
    int min_steps;      /* measured per limit, at least (default 3) */
};

BSO_API void bso_power_options_init(struct bso_power_options *opt);

typedef struct bso_power_tuner bso_power_tuner;

/* A tuner for the monitor's GPUs; the monitor must outlive it. BSO_ENODEV when the monitor has
 * no GPU whose energy NVML measures; BSO_EINVAL for bad options. On failure *out is NULL and
 * err (errcap bytes, may be NULL) says why. */
BSO_API int bso_power_tuner_new(bso_monitor *m, const struct bso_power_options *opt,
                                bso_power_tuner **out, char *err, size_t errcap);
/* Restores the GPUs' original limits and frees. NULL is a no-op. */
BSO_API void bso_power_tuner_free(bso_power_tuner *t);

/* Begins profiling by setting the first limit. Returns the new state: BSO_POWER_PROFILING, or
 * BSO_POWER_OFF when limits cannot be set (nothing changed; errmsg says why). BSO_ESTATE when
 * not idle. */
BSO_API int bso_power_tuner_start(bso_power_tuner *t);
/* Counts one training step of `samples` work units (> 0). Warm-up, measurement and the next
 * limit change happen at step boundaries; after the last limit the choice is set. Returns the
 * state (BSO_POWER_DONE once chosen), or BSO_EINVAL / BSO_EIO (a GPU stopped answering: the
 * original limits are restored and the state is OFF). Outside profiling it does nothing. */
BSO_API int bso_power_tuner_step(bso_power_tuner *t, double samples);
/* Ends profiling early, as when the run ends before every limit was measured: the limit in
 * measurement counts if it already has min_steps steps, and the cheapest of at least two
 * measured limits is set and becomes the result (DONE). With fewer, the original limits come
 * back and the state is OFF (errmsg says why). Outside profiling it returns the state. */
BSO_API int bso_power_tuner_finish(bso_power_tuner *t);
/* Sets a limit already known (W per GPU, e.g. the server's choice for this batch size),
 * without profiling. Returns BSO_POWER_DONE or BSO_POWER_OFF; BSO_EINVAL for a limit outside
 * the GPUs' range, BSO_ESTATE when not idle. */
BSO_API int bso_power_tuner_apply(bso_power_tuner *t, double limit_w);
BSO_API int bso_power_tuner_state(const bso_power_tuner *t);
/* Why the state is OFF, or why the last call failed; "" otherwise. */
BSO_API const char *bso_power_tuner_errmsg(const bso_power_tuner *t);
/* The limits it will try (W, highest first); returns how many (at most cap are written). */
BSO_API size_t bso_power_tuner_limits(const bso_power_tuner *t, double *limits_w, size_t cap);

struct bso_power_result {
    size_t n;
    struct bso_power_point points[BSO_POWER_MAX_LIMITS]; /* in the order measured */
    size_t chosen;                                       /* index into points */
    double limit_w;                                      /* points[chosen].limit_w */
    double max_power_w;                                  /* what the choice weighed */
    double eta;
};

/* What profiling measured and chose; BSO_ESTATE unless it profiled to DONE. */
BSO_API int bso_power_tuner_result(const bso_power_tuner *t, struct bso_power_result *out);

/* Restores every GPU power limit this process changed and is still holding; returns how many
 * GPUs it restored. Run by bso_power_tuner_free, at exit and on fatal signals. */
BSO_API int bso_power_restore(void);

/* For `bso gpus --restore-power`: restores the limits recorded by processes that are gone
 * (the record file, BSO_POWER_RECORD), and drops their lines. say(ctx, line) hears one line
 * per GPU. Returns how many were restored, or a negative error (BSO_EIO with a message through
 * say when NVML refuses, e.g. without permission). */
BSO_API int bso_power_restore_recorded(void (*say)(void *ctx, const char *line), void *ctx);

#ifdef __cplusplus
}
#endif
#endif
