/* Python-compatible number formatting; see pyfmt.h. */
#include "core/pyfmt.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"

static int put(char *buf, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n + 1 > cap)
        return BSO_ERANGE;
    memcpy(buf, s, n + 1);
    return (int)n;
}

int bso_pyfloat_repr(double v, char *buf, size_t cap)
{
    if (isnan(v))
        return put(buf, cap, "nan");
    if (isinf(v))
        return put(buf, cap, v < 0 ? "-inf" : "inf");

    /* Find the fewest significant digits that read back as v. */
    char sci[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec - 1, v);
        if (strtod(sci, NULL) == v)
            break;
    }
    /* sci is "-d.ddde[+-]XX": split it into sign, digits and decimal exponent. */
    const char *p = sci;
    int negative = *p == '-';
    if (negative)
        p++;
    char digits[24];
    size_t nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int exp10 = atoi(p + 1);

    char out[BSO_PYFLOAT_MAX + 8];
    size_t o = 0;
    if (negative)
        out[o++] = '-';
    if (exp10 < -4 || exp10 >= 16) {
        /* Scientific: d[.ddd]e[+-]XX with at least two exponent digits. */
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            memcpy(out + o, digits + 1, nd - 1);
            o += nd - 1;
        }
        o +=
            (size_t)snprintf(out + o, sizeof out - o, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    } else if (exp10 < 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = -1; i > exp10; i--)
            out[o++] = '0';
        memcpy(out + o, digits, nd);
        o += nd;
    } else {
        size_t int_digits = (size_t)exp10 + 1;
        for (size_t i = 0; i < int_digits; i++)
            out[o++] = i < nd ? digits[i] : '0';
        out[o++] = '.';
        if (nd > int_digits) {
            memcpy(out + o, digits + int_digits, nd - int_digits);
            o += nd - int_digits;
        } else {
            out[o++] = '0';
        }
    }
    out[o] = '\0';
    return put(buf, cap, out);
}

int bso_pyintlist_repr(const int64_t *v, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    if (cap < 3)
        return BSO_ERANGE;
    buf[o++] = '[';
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(buf + o, cap - o, "%s%" PRId64, i ? ", " : "", v[i]);
        if (w < 0 || (size_t)w >= cap - o)
            return BSO_ERANGE;
        o += (size_t)w;
    }
    if (o + 2 > cap)
        return BSO_ERANGE;
    buf[o++] = ']';
    buf[o] = '\0';
    return (int)o;
}
