/* Zeus's cost function; see cost.h. */
#include "core/cost.h"

double bso_cost(double energy, double time, double eta_knob, double max_power)
{
    return eta_knob * energy + (1 - eta_knob) * max_power * time;
}
