/*
 * Standard normal draws by the 256-level ziggurat method (Marsaglia and Tsang), arranged the
 * way numpy's Generator.standard_normal consumes its 64-bit draws, so that seeded sequences
 * match numpy bit for bit: 8 bits pick the strip, 1 bit the sign, 52 bits the abscissa.
 */
#include <math.h>

#include "core/rng.h"
#include "core/ziggurat_tables.h"

/* Right edge of the base strip and its reciprocal. */
static const double zig_r = 3.6541528853610087963519472518;
static const double zig_inv_r = 0.27366123732975827203338247596;

double bso_rng_standard_normal(bso_rng *rng)
{
    for (;;) {
        uint64_t r = bso_rng_next64(rng);
        const unsigned strip = (unsigned)(r & 0xff);
        r >>= 8;
        const int negative = (int)(r & 1);
        const uint64_t rabs = (r >> 1) & 0x000fffffffffffffULL;
        double x = (double)rabs * zig_wi[strip];
        if (negative)
            x = -x;
        if (rabs < zig_ki[strip])
            return x; /* inside the rectangle: the common case */
        if (strip == 0) {
            /* The tail beyond zig_r, by Marsaglia's exponential rejection. 1 - U keeps the
             * logarithm finite. */
            for (;;) {
                double xx = -zig_inv_r * log1p(-bso_rng_next_double(rng));
                double yy = -log1p(-bso_rng_next_double(rng));
                if (yy + yy > xx * xx)
                    return ((rabs >> 8) & 1) ? -(zig_r + xx) : zig_r + xx;
            }
        }
        if ((zig_fi[strip - 1] - zig_fi[strip]) * bso_rng_next_double(rng) + zig_fi[strip] <
            exp(-0.5 * x * x))
            return x;
    }
}
