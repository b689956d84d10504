/*
 * Zeus's golden scenario G (reference spec, Appendix B) as a synthetic workload: batch sizes
 * 8..256, default 64; size 8 never converges, the others converge after one epoch at a cost that
 * wobbles around a per-size base. The seeded runs of this workload were recorded from Zeus's own
 * server, so it serves both the demo and the golden test.
 */
#ifndef BSO_SIM_SCENARIO_G_H
#define BSO_SIM_SCENARIO_G_H

#include <stdint.h>

#include "core/report.h"
#include "core/spec.h"

/* The scenario's job (unvalidated), with the given window and seed (seed < 0: unseeded). */
void bso_scenario_g_spec(struct bso_job_spec *spec, int64_t window_size, int64_t seed);

/* The single, final report of trial k at batch size bs: time = cost / 500 and energy 0, so that
 * the cost is BASE[bs] + ((k * 37) % 11 - 5) * 150. */
struct bso_report bso_scenario_g_report(int64_t k, int64_t bs);

#endif
