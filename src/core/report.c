/* The report decision; see report.h. */
#include "core/report.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "bso/error.h"
#include "core/cost.h"
#include "core/pyfmt.h"

int bso_report_check(const struct bso_report *rep, char *msg, size_t cap)
{
    const char *bad = NULL;
    if (!(isfinite(rep->time) && rep->time >= 0))
        bad = "time must be a finite number of seconds >= 0";
    else if (!(isfinite(rep->energy) && rep->energy >= 0))
        bad = "energy must be a finite number of joules >= 0";
    else if (!isfinite(rep->metric))
        bad = "metric must be a finite number";
    else if (rep->current_epoch < 0)
        bad = "current_epoch must be >= 0";
    if (!bad)
        return 0;
    if (msg && cap)
        snprintf(msg, cap, "%s", bad);
    return BSO_EINVAL;
}

void bso_report_decide(const struct bso_job_spec *spec, bool has_min_cost, double min_cost,
                       int64_t batch_size, const struct bso_report *rep, struct bso_decision *out)
{
    double bound = INFINITY;
    if (spec->has_beta_knob && has_min_cost)
        bound = spec->beta_knob * min_cost;
    const double cost = bso_cost(rep->energy, rep->time, spec->eta_knob, spec->max_power);
    const bool within = bound >= cost;
    const bool reached = spec->higher_is_better_metric ? rep->metric >= spec->target_metric
                                                       : rep->metric <= spec->target_metric;
    out->cost = cost;
    if (within && rep->current_epoch < spec->max_epochs && !reached) {
        out->stop_train = false;
        out->converged = false;
        snprintf(out->message, sizeof out->message, "Stop condition not met, keep training");
        return;
    }
    out->stop_train = true;
    out->converged = reached && within;
    if (out->converged) {
        snprintf(out->message, sizeof out->message, "Train succeeded");
    } else if (!within) {
        char c[BSO_PYFLOAT_MAX], b[BSO_PYFLOAT_MAX], m[BSO_PYFLOAT_MAX];
        bso_pyfloat_repr(cost, c, sizeof c);
        bso_pyfloat_repr(spec->beta_knob, b, sizeof b);
        bso_pyfloat_repr(min_cost, m, sizeof m);
        /* Zeus's message is a triple-quoted f-string: a newline and 20 spaces are part of it. */
        snprintf(out->message, sizeof out->message,
                 "Batch Size(%" PRId64 ") exceeded the cost upper bound: current cost(%s) >\n"
                 "                    beta_knob(%s)*min_cost(%s)",
                 batch_size, c, b, m);
    } else {
        snprintf(out->message, sizeof out->message,
                 "Train failed to converge within max_epoch(%" PRId64 ")", spec->max_epochs);
    }
}
