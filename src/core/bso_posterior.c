/* The posterior of the epochs each batch size of a job needs, as Thompson sampling and change
 * detection read it: the run-to-run spread pooled over sizes, and each size's mean shrunk
 * toward a smooth curve of epochs against batch size (docs/policy.md, "The bso policy",
 * item 5). */
#include "core/bso_policy.h"

#include <math.h>

#include "core/bso_policy_internal.h"
#include "core/job.h"

/* What the pooled spread's prior (BSO_PRIOR_CV) is worth, in runs. */
#define PRIOR_RUNS 2.0
/* How far sizes scatter about the curve beyond their own noise: assumed until three sizes can
 * tell, and never less. */
#define PRIOR_SCATTER 0.2
#define MIN_SCATTER 0.02

/* The relative spread of a size's epochs-to-target from run to run, as a variance of log
 * epochs, pooled over sizes (each run beyond a size's first is one degree of freedom), with
 * BSO_PRIOR_CV worth PRIOR_RUNS runs. */
double bso_policy_pooled_cv2(const struct bso_job *job)
{
    double sq = PRIOR_RUNS * BSO_PRIOR_CV * BSO_PRIOR_CV, dof = PRIOR_RUNS;
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++) {
        const struct bso_bs_stat *s = &job->stats[i];
        if (s->successes < 2)
            continue;
        const double m = bso_bs_mean_epochs(s);
        const double ss = s->sum_sq_epochs - (double)s->successes * m * m;
        sq += ss > 0 ? ss / (m * m) : 0;
        dof += (double)(s->successes - 1);
    }
    return sq / dof;
}

void bso_fit_add(struct bso_line_fit *f, double x, double y, double w)
{
    f->w += w;
    f->x += w * x;
    f->y += w * y;
    f->xx += w * x * x;
    f->xy += w * x * y;
    f->points++;
}

/* The slope, or `otherwise` with fewer than two distinct x. */
double bso_fit_slope(const struct bso_line_fit *f, double otherwise)
{
    const double den = f->w * f->xx - f->x * f->x;
    return f->points >= 2 && den > 0 ? (f->w * f->xy - f->x * f->y) / den : otherwise;
}

/* A size's point on the shared curve of epochs against batch size: its log mean epochs,
 * weighted by its runs that reached; a size that has not reached here but needed some epochs in
 * the job this one was transferred from, that, as one run. Returns the weight (0: none). */
static double curve_point(const struct bso_job *job, size_t i, double *log_epochs)
{
    const struct bso_bs_stat *s = &job->stats[i];
    if (s->successes > 0) {
        *log_epochs = log(bso_bs_mean_epochs(s));
        return (double)s->successes;
    }
    if (bso_policy_transferred_prior(job, i) > 0) {
        *log_epochs = log(bso_policy_transferred_prior(job, i));
        return 1;
    }
    return 0;
}

/* The posterior of each size's mean log epochs, and the pooled run-to-run variance of log
 * epochs (*cv2); see bso_policy_epochs_posterior. */
void bso_policy_posterior(const struct bso_job *job, double *mean_log, double *sd_log,
                          double *cv2_out)
{
    const size_t n = job->spec.n_batch_sizes;
    const double cv2 = bso_policy_pooled_cv2(job);
    /* Sizes share a smooth curve of epochs against batch size: a line in log-log, weighted
     * by runs, over the sizes that reached the target (curve_point). */
    struct bso_line_fit fit = {0};
    double log_e[BSO_MAX_BATCH_SIZES], weight[BSO_MAX_BATCH_SIZES];
    for (size_t i = 0; i < n; i++) {
        weight[i] = curve_point(job, i, &log_e[i]);
        if (weight[i] > 0)
            bso_fit_add(&fit, log2((double)job->spec.batch_sizes[i]), log_e[i], weight[i]);
    }
    const int k = fit.points;
    const double slope = bso_fit_slope(&fit, 0);
    const double icpt = fit.w > 0 ? (fit.y - slope * fit.x) / fit.w : 0;
    /* How far sizes scatter about the line beyond their own noise: PRIOR_SCATTER until a
     * third size can tell, never below MIN_SCATTER. */
    double scatter = PRIOR_SCATTER * PRIOR_SCATTER;
    if (k >= 3) {
        double r2 = 0;
        for (size_t i = 0; i < n; i++) {
            if (!(weight[i] > 0))
                continue;
            const double r = log_e[i] - icpt - slope * log2((double)job->spec.batch_sizes[i]);
            r2 += r * r - cv2 / weight[i];
        }
        r2 /= (double)(k - 2);
        scatter = r2 > MIN_SCATTER * MIN_SCATTER ? r2 : MIN_SCATTER * MIN_SCATTER;
    }
    /* Each size's mean is shrunk toward the line by the two precisions. */
    for (size_t i = 0; i < n; i++) {
        const struct bso_bs_stat *s = &job->stats[i];
        if (s->successes == 0) {
            mean_log[i] = sd_log[i] = NAN;
            continue;
        }
        const double own = (double)s->successes / cv2, line = 1 / scatter;
        const double on_line = icpt + slope * log2((double)job->spec.batch_sizes[i]);
        mean_log[i] = (own * log(bso_bs_mean_epochs(s)) + line * on_line) / (own + line);
        sd_log[i] = 1 / sqrt(own + line);
    }
    *cv2_out = cv2;
}

void bso_policy_epochs_posterior(const struct bso_job *job, double *mean_log, double *sd_log)
{
    double cv2;
    bso_policy_posterior(job, mean_log, sd_log, &cv2);
}
