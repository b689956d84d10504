/*
 * CPU package energy from Linux's powercap interface (RAPL): the intel-rapl:N package domains
 * under /sys/class/powercap (or BSO_POWERCAP_ROOT), with counter wrap-around handled.
 */
#ifndef BSO_CLIENT_RAPL_H
#define BSO_CLIENT_RAPL_H

#include <stdbool.h>
#include <stddef.h>

#define RAPL_MAX_DOMAINS 16

struct rapl {
    size_t n;
    char path[RAPL_MAX_DOMAINS][512];  /* .../energy_uj */
    double range_uj[RAPL_MAX_DOMAINS]; /* max_energy_range_uj: where the counter wraps */
    double last_uj[RAPL_MAX_DOMAINS];
    double total_j; /* accumulated across reads and wraps */
};

/* Finds readable package domains. false (with a reason) when there are none. */
bool bso_rapl_open(struct rapl *r, char *why, size_t cap);
/* Reads the counters and returns the energy accumulated since open, in joules. A read must come
 * at least once per wrap period (minutes); the monitor's sampler sees to that. false on a read
 * failure. */
bool bso_rapl_read(struct rapl *r, double *joules);

#endif
