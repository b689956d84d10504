/* The few operating-system services BSO needs, kept out of the pure core. */
#ifndef BSO_OS_H
#define BSO_OS_H

#include <stddef.h>
#include <stdint.h>

/* Fills words[0..n) with random bits from the kernel (getrandom). 0 or BSO_EIO. */
int bso_os_entropy(uint32_t *words, size_t n);

/* Seconds on the monotonic clock (for intervals; the origin means nothing). */
double bso_os_monotonic_s(void);

#endif
