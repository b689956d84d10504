/*
 * 128-bit unsigned integers for PCG64, through the GCC/Clang __int128 extension, plus decimal
 * conversion (numpy stores PCG64 state as 128-bit decimal integers in JSON).
 */
#ifndef BSO_CORE_U128_H
#define BSO_CORE_U128_H

#include <stddef.h>
#include <stdint.h>

__extension__ typedef unsigned __int128 bso_u128;

static inline bso_u128 bso_u128_make(uint64_t hi, uint64_t lo)
{
    return ((bso_u128)hi << 64) | lo;
}

/* Writes the decimal form of v with a terminating NUL; needs cap >= 40. Returns the length or
 * BSO_ERANGE when cap is too small. */
int bso_u128_to_dec(bso_u128 v, char *buf, size_t cap);

/* Parses a run of decimal digits starting at s (no sign, no spaces). On success stores the value
 * in *out and the number of characters used in *used. BSO_EPARSE when there is no digit,
 * BSO_ERANGE on overflow. */
int bso_u128_from_dec(const char *s, bso_u128 *out, size_t *used);

#endif
