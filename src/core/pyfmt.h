/*
 * Numbers formatted as Python formats them, for messages and JSON that must read exactly like
 * Zeus's: repr(float) (shortest round-trip digits, '1e-05', '3000.0', 'inf') and repr(list[int]).
 */
#ifndef BSO_CORE_PYFMT_H
#define BSO_CORE_PYFMT_H

#include <stddef.h>
#include <stdint.h>

/* Longest repr of a double, with its NUL. */
#define BSO_PYFLOAT_MAX 32

/* Python's repr(v). Returns the length, or BSO_ERANGE if cap is too small. */
int bso_pyfloat_repr(double v, char *buf, size_t cap);

/* Python's repr of a list of ints, e.g. "[8, 16, 32]". Returns the length or BSO_ERANGE. */
int bso_pyintlist_repr(const int64_t *v, size_t n, char *buf, size_t cap);

#endif
