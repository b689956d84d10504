/*
 * Setting GPU power limits, and always putting them back. The first change to a GPU in this
 * process remembers its original limit, writes it to the record file (BSO_POWER_RECORD,
 * default /var/tmp/bso-power-limits: "uuid index original_mw pid" per line) and installs the
 * exit and fatal-signal handlers that restore it (include/bso/power.h). NVML is opened here
 * once per process and kept, so a restore never depends on a monitor still being open.
 */
#ifndef BSO_CLIENT_POWER_LIMITS_H
#define BSO_CLIENT_POWER_LIMITS_H

#include <stddef.h>

/* The settable range of GPU `index` (NVML index), in mW. 0, or BSO_EIO / BSO_ENODEV with err. */
int bso_power_limit_range(unsigned index, unsigned *lo_mw, unsigned *hi_mw, char *err,
                          size_t errcap);
/* Sets GPU `index`'s limit to mw. When limits cannot be set here (no permission, not
 * supported, an NVML without the call) BSO_ENODEV, with a sentence in err that says what is
 * missing; BSO_EINVAL for a limit NVML rejects; BSO_EIO otherwise. */
int bso_power_limit_set(unsigned index, unsigned mw, char *err, size_t errcap);
/* Puts GPU `index` back to the limit it had before this process changed it (nothing if it
 * never did). 0 or BSO_EIO. */
int bso_power_limit_restore(unsigned index);

#endif
