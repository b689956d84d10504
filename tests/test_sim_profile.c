/* bso-sim's device profile from the traces: rates at the largest power limit, the probe's
 * measurement noise (deterministic, independent of the policy) and the probe's own cost. */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "sim/profile.h"
#include "sim/sim.h"

/* Two sizes, two limits: 32 runs an epoch in 10 s at 80 W (100 W limit) or 8 s at 150 W
 * (200 W); 64 in 6 s at 90 W or 5 s at 180 W. 1000 samples an epoch. */
static void toy_job(struct sim_job *job)
{
    memset(job, 0, sizeof(*job));
    snprintf(job->w.dataset, sizeof job->w.dataset, "toy");
    snprintf(job->w.network, sizeof job->w.network, "net");
    job->w.samples_per_epoch = 1000;
    job->n_bs = 2;
    const double t[2][2] = {{10, 8}, {6, 5}}, w[2][2] = {{80, 150}, {90, 180}};
    for (size_t b = 0; b < 2; b++) {
        job->bs[b].bs = b ? 64 : 32;
        job->bs[b].n_pl = 2;
        for (size_t p = 0; p < 2; p++) {
            job->bs[b].pl[p] = p ? 200 : 100;
            job->bs[b].time_per_epoch[p] = t[b][p];
            job->bs[b].power[p] = w[b][p];
        }
    }
    job->default_bs = 64;
    job->max_power = 200;
}

static void close_to(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fabs(want))
        fail_msg("got %.17g, want %.17g", got, want);
}

static void test_exact_profile_is_the_trace_at_max_power(void **state)
{
    (void)state;
    struct sim_job job;
    toy_job(&job);
    struct sim_probe_options po = {.steps = 4, .noise = 0};
    struct sim_profile_entry e[2];
    sim_profile_derive(&job, &po, 1, e);
    assert_int_equal(e[0].bs, 32);
    close_to(e[0].samples_per_s, 1000.0 / 8);           /* 125 samples/s */
    close_to(e[0].joules_per_sample, 150.0 * 8 / 1000); /* 1.2 J */
    assert_int_equal(e[1].bs, 64);
    close_to(e[1].samples_per_s, 200);
    close_to(e[1].joules_per_sample, 0.9);
}

static void test_noise_is_seeded_and_scatters(void **state)
{
    (void)state;
    struct sim_job job;
    toy_job(&job);
    struct sim_probe_options po = {.steps = 4, .noise = 0.1};
    struct sim_profile_entry a[2], b[2], c[2];
    sim_profile_derive(&job, &po, 5, a);
    sim_profile_derive(&job, &po, 5, b);
    sim_profile_derive(&job, &po, 6, c);
    for (size_t i = 0; i < 2; i++) { /* the same seed, the same profile (field by field:
                                        the struct has padding) */
        assert_true(a[i].bs == b[i].bs && a[i].feasible == b[i].feasible);
        assert_true(a[i].samples_per_s == b[i].samples_per_s);
        assert_true(a[i].joules_per_sample == b[i].joules_per_sample);
    }
    assert_true(a[0].samples_per_s != c[0].samples_per_s);
    /* Over many seeds the measured rate scatters about the truth by about the noise. */
    double sum = 0, sum2 = 0;
    const int n = 4000;
    for (int s = 0; s < n; s++) {
        sim_profile_derive(&job, &po, s, a);
        const double x = log(a[1].samples_per_s / 200);
        sum += x;
        sum2 += x * x;
        assert_true(a[1].joules_per_sample > 0);
    }
    const double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    assert_true(fabs(mean) < 0.01);
    assert_true(fabs(sd - 0.1) < 0.01);
}

static void test_probe_cost(void **state)
{
    (void)state;
    struct sim_job job;
    toy_job(&job);
    struct sim_probe_options po = {.steps = 4, .noise = 0};
    double time, energy;
    sim_probe_cost(&job, &po, &time, &energy);
    /* 4 steps of 32 samples at 8 s per 1000 samples; 4 + 2 (the failed try at 128) steps of
     * 64 at 5 s per 1000. */
    const double t32 = 4 * 32 * 8 / 1000.0, t64 = 6 * 64 * 5 / 1000.0;
    close_to(time, t32 + t64);
    close_to(energy, t32 * 150 + t64 * 180);
    po.steps = 8;
    double time8, energy8;
    sim_probe_cost(&job, &po, &time8, &energy8);
    assert_true(time8 > time && energy8 > energy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_profile_is_the_trace_at_max_power),
        cmocka_unit_test(test_noise_is_seeded_and_scatters),
        cmocka_unit_test(test_probe_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
