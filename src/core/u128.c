/* Decimal conversion of 128-bit unsigned integers. */
#include "core/u128.h"

#include "bso/error.h"

int bso_u128_to_dec(bso_u128 v, char *buf, size_t cap)
{
    char tmp[40];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v != 0);
    if (cap < n + 1)
        return BSO_ERANGE;
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return (int)n;
}

int bso_u128_from_dec(const char *s, bso_u128 *out, size_t *used)
{
    const bso_u128 max = ~(bso_u128)0;
    bso_u128 v = 0;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10)
            return BSO_ERANGE;
        v = v * 10 + d;
    }
    if (i == 0)
        return BSO_EPARSE;
    *out = v;
    *used = i;
    return 0;
}
