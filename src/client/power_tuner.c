/* The power-limit tuner; see include/bso/power.h. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/power.h"
#include "client/power_limits.h"
#include "os/os.h"

struct bso_power_tuner {
    bso_monitor *m;
    struct bso_power_options opt;
    size_t n_gpus;
    unsigned gpu[BSO_MAX_GPUS]; /* NVML indices */
    unsigned lo_mw, hi_mw;      /* the range every GPU allows */
    size_t n_limits;
    double limits_w[BSO_POWER_MAX_LIMITS]; /* highest first */
    int state;
    bool changed; /* some limit was set: free restores */
    /* Profiling: limit k is in its warm-up, or measuring since phase_t0. */
    size_t k;
    bool measuring;
    double phase_t0;
    double samples;
    int steps;
    char window[BSO_WINDOW_NAME_MAX];
    struct bso_power_result result;
    char errmsg[320];
};

const char *bso_power_state_name(int state)
{
    static const char *const names[] = {"idle", "profiling", "done", "off"};
    return state >= 0 && state < 4 ? names[state] : "unknown";
}

void bso_power_options_init(struct bso_power_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->eta = 0.5;
    opt->n_limits = 5;
    opt->warmup_s = 1.0;
    opt->window_s = 3.0;
    opt->min_steps = 3;
}

__attribute__((format(printf, 3, 4))) static int fail(bso_power_tuner *t, int code, const char *fmt,
                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->errmsg, sizeof t->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

/* The limits to try: n evenly spread from hi down to lo, in whole watts, without repeats. */
static void plan_limits(bso_power_tuner *t)
{
    const double hi = floor(t->hi_mw / 1000.0), lo = ceil(t->lo_mw / 1000.0);
    const int n = t->opt.n_limits;
    t->n_limits = 0;
    for (int j = 0; j < n; j++) {
        const double w = round(hi - (hi - lo) * j / (n - 1));
        if (t->n_limits > 0 && w >= t->limits_w[t->n_limits - 1])
            continue;
        t->limits_w[t->n_limits++] = w;
    }
}

int bso_power_tuner_new(bso_monitor *m, const struct bso_power_options *opt_in,
                        bso_power_tuner **out, char *err, size_t errcap)
{
    *out = NULL;
    struct bso_power_options opt;
    if (opt_in)
        opt = *opt_in;
    else
        bso_power_options_init(&opt);
    bso_power_tuner *t = calloc(1, sizeof *t);
    if (!t) {
        if (err && errcap)
            snprintf(err, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    t->m = m;
    t->opt = opt;
    int rc = 0;
    if (!m)
        rc = fail(t, BSO_EINVAL, "the tuner needs an energy monitor");
    else if (!(opt.eta >= 0 && opt.eta <= 1))
        rc = fail(t, BSO_EINVAL, "eta must be within [0, 1]");
    else if (opt.n_limits < 2 || opt.n_limits > BSO_POWER_MAX_LIMITS)
        rc = fail(t, BSO_EINVAL, "n_limits must be 2 to %d", BSO_POWER_MAX_LIMITS);
    else if (!(opt.warmup_s >= 0 && opt.warmup_s < 3600) ||
             !(opt.window_s > 0 && opt.window_s < 3600) || opt.min_steps < 1)
        rc = fail(t, BSO_EINVAL,
                  "warm-up must be 0 to 3600 s, the window above 0 and below 3600 s, and "
                  "min_steps at least 1");
    else if (!(opt.max_power_w >= 0) || !isfinite(opt.max_power_w))
        rc = fail(t, BSO_EINVAL, "max_power_w must be a power in watts, or 0");
    for (size_t i = 0; rc == 0 && m && i < bso_monitor_gpu_count(m); i++) {
        struct bso_gpu_info g;
        bso_monitor_gpu(m, i, &g);
        if (g.source != BSO_SOURCE_NVML_COUNTER && g.source != BSO_SOURCE_NVML_POWER)
            continue;
        unsigned lo, hi;
        char why[256];
        if (bso_power_limit_range((unsigned)g.index, &lo, &hi, why, sizeof why) < 0) {
            rc = fail(t, BSO_ENODEV, "%s", why);
            break;
        }
        t->lo_mw = t->n_gpus == 0 || lo > t->lo_mw ? lo : t->lo_mw;
        t->hi_mw = t->n_gpus == 0 || hi < t->hi_mw ? hi : t->hi_mw;
        t->gpu[t->n_gpus++] = (unsigned)g.index;
    }
    if (rc == 0 && t->n_gpus == 0)
        rc = fail(t, BSO_ENODEV, "no GPU whose power NVML measures: power limits are not tuned");
    if (rc == 0 && t->hi_mw / 1000 <= (t->lo_mw + 999) / 1000)
        rc = fail(t, BSO_ENODEV, "the GPUs allow a single power limit: nothing to tune");
    if (rc == 0 && t->opt.max_power_w == 0)
        t->opt.max_power_w = bso_monitor_max_power_w(m);
    if (rc < 0) {
        if (err && errcap)
            snprintf(err, errcap, "%s", t->errmsg);
        free(t);
        return rc;
    }
    plan_limits(t);
    snprintf(t->window, sizeof t->window, "bso-power-%p", (void *)t);
    t->state = BSO_POWER_IDLE;
    *out = t;
    return 0;
}

static void restore(bso_power_tuner *t)
{
    if (!t->changed)
        return;
    for (size_t i = 0; i < t->n_gpus; i++)
        bso_power_limit_restore(t->gpu[i]);
    t->changed = false;
}

/* Closes a measuring window whose figures are not wanted. */
static void drop_window(bso_power_tuner *t)
{
    if (!t->measuring)
        return;
    struct bso_measurement unused;
    bso_monitor_end(t->m, t->window, &unused);
    t->measuring = false;
}

void bso_power_tuner_free(bso_power_tuner *t)
{
    if (!t)
        return;
    if (t->state == BSO_POWER_PROFILING)
        drop_window(t);
    restore(t);
    free(t);
}

/* Sets every GPU to limit_w. When limits cannot be set here, puts back what was changed and
 * turns the tuner off (not an error: the job goes on without). */
static int set_all(bso_power_tuner *t, double limit_w)
{
    const unsigned mw = (unsigned)(limit_w * 1000.0);
    for (size_t i = 0; i < t->n_gpus; i++) {
        char why[256];
        const int rc = bso_power_limit_set(t->gpu[i], mw, why, sizeof why);
        if (rc == 0) {
            t->changed = true;
            continue;
        }
        restore(t);
        if (rc == BSO_ENODEV) {
            t->state = BSO_POWER_OFF;
            fail(t, 0, "%s: optimising the batch size only", why);
            return BSO_POWER_OFF;
        }
        t->state = BSO_POWER_OFF;
        return fail(t, rc, "%s", why);
    }
    return 0;
}

int bso_power_tuner_start(bso_power_tuner *t)
{
    if (t->state != BSO_POWER_IDLE)
        return fail(t, BSO_ESTATE, "the tuner already %s",
                    t->state == BSO_POWER_OFF ? "gave up" : "ran");
    memset(&t->result, 0, sizeof t->result);
    t->k = 0;
    t->measuring = false;
    const int rc = set_all(t, t->limits_w[0]);
    if (rc != 0)
        return rc;
    t->state = BSO_POWER_PROFILING;
    t->phase_t0 = bso_os_monotonic_s();
    return t->state;
}

int bso_power_tuner_apply(bso_power_tuner *t, double limit_w)
{
    if (t->state != BSO_POWER_IDLE)
        return fail(t, BSO_ESTATE, "the tuner already %s",
                    t->state == BSO_POWER_OFF ? "gave up" : "ran");
    const double lo = ceil(t->lo_mw / 1000.0), hi = floor(t->hi_mw / 1000.0);
    if (!(limit_w >= lo && limit_w <= hi))
        return fail(t, BSO_EINVAL, "a power limit of %g W is outside the GPUs' range, %g to %g W",
                    limit_w, lo, hi);
    const int rc = set_all(t, limit_w);
    if (rc != 0)
        return rc;
    t->result.limit_w = limit_w;
    t->state = BSO_POWER_DONE;
    return t->state;
}

/* Ends limit k's measurement into the result. */
static int measure_end(bso_power_tuner *t)
{
    struct bso_measurement m;
    t->measuring = false;
    if (bso_monitor_end(t->m, t->window, &m) < 0)
        return fail(t, BSO_EIO, "%s", bso_monitor_errmsg(t->m));
    double joules = 0;
    for (size_t i = 0; i < m.n_gpus; i++)
        joules += m.gpu_energy_j[i];
    struct bso_power_point *p = &t->result.points[t->result.n++];
    p->limit_w = t->limits_w[t->k];
    p->samples_per_s = m.time_s > 0 ? t->samples / m.time_s : 0;
    p->power_w = m.time_s > 0 ? joules / m.time_s : 0;
    return 0;
}

/* All limits measured: set the cheapest. */
static int choose(bso_power_tuner *t)
{
    struct bso_power_result *r = &t->result;
    r->eta = t->opt.eta;
    r->max_power_w = t->opt.max_power_w;
    if (bso_power_choose(r->points, r->n, r->eta, r->max_power_w, &r->chosen) < 0) {
        restore(t);
        t->state = BSO_POWER_OFF;
        return fail(t, BSO_EIO, "no power limit had a measurable throughput");
    }
    r->limit_w = r->points[r->chosen].limit_w;
    const int rc = set_all(t, r->limit_w);
    if (rc != 0)
        return rc;
    t->state = BSO_POWER_DONE;
    return t->state;
}

int bso_power_tuner_step(bso_power_tuner *t, double samples)
{
    if (!(samples > 0) || !isfinite(samples))
        return fail(t, BSO_EINVAL, "a step does a positive amount of work, not %g", samples);
    if (t->state != BSO_POWER_PROFILING)
        return t->state;
    const double now = bso_os_monotonic_s();
    if (!t->measuring) {
        if (now - t->phase_t0 < t->opt.warmup_s)
            return t->state;
        if (bso_monitor_begin(t->m, t->window) < 0) {
            restore(t);
            t->state = BSO_POWER_OFF;
            return fail(t, BSO_EIO, "%s", bso_monitor_errmsg(t->m));
        }
        t->measuring = true;
        t->phase_t0 = now;
        t->samples = 0;
        t->steps = 0;
        return t->state;
    }
    t->samples += samples;
    t->steps++;
    if (now - t->phase_t0 < t->opt.window_s || t->steps < t->opt.min_steps)
        return t->state;
    if (measure_end(t) < 0) {
        restore(t);
        t->state = BSO_POWER_OFF;
        return BSO_EIO;
    }
    if (++t->k == t->n_limits)
        return choose(t);
    const int rc = set_all(t, t->limits_w[t->k]);
    if (rc != 0)
        return rc;
    t->phase_t0 = bso_os_monotonic_s();
    return t->state;
}

int bso_power_tuner_finish(bso_power_tuner *t)
{
    if (t->state != BSO_POWER_PROFILING)
        return t->state;
    if (t->measuring && t->steps >= t->opt.min_steps && measure_end(t) < 0) {
        restore(t);
        t->state = BSO_POWER_OFF;
        return BSO_EIO;
    }
    drop_window(t); /* too few steps to count */
    if (t->result.n >= 2)
        return choose(t);
    restore(t);
    t->state = BSO_POWER_OFF;
    fail(t, 0, "the run ended after %zu of %zu power limits were measured: too few to choose",
         t->result.n, t->n_limits);
    return t->state;
}

int bso_power_tuner_state(const bso_power_tuner *t)
{
    return t->state;
}

const char *bso_power_tuner_errmsg(const bso_power_tuner *t)
{
    return t->errmsg;
}

size_t bso_power_tuner_limits(const bso_power_tuner *t, double *limits_w, size_t cap)
{
    for (size_t i = 0; i < t->n_limits && i < cap; i++)
        limits_w[i] = t->limits_w[i];
    return t->n_limits;
}

int bso_power_tuner_result(const bso_power_tuner *t, struct bso_power_result *out)
{
    if (t->state != BSO_POWER_DONE || t->result.n == 0)
        return BSO_ESTATE; /* it applied a known limit, or has not finished */
    *out = t->result;
    return 0;
}
