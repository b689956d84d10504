/* The cost the optimizer minimises (Zeus's zeus_cost), in J-equivalent. */
#ifndef BSO_CORE_COST_H
#define BSO_CORE_COST_H

/* eta * energy + (1 - eta) * max_power * time, evaluated in exactly this order (the build turns
 * floating-point contraction off) so that costs, and the choices built on them, match Zeus. */
double bso_cost(double energy, double time, double eta_knob, double max_power);

/* The largest cost a report may come to: far beyond any training run (1e100 J-equivalent),
 * and small enough that the policies' sums of squared costs stay finite. */
#define BSO_MAX_COST 1e100

#endif
