/*
 * Test peer for vs_numpy.py: reads commands on stdin, one per line, and prints what our RNG,
 * statistics and formatting produce, in a form the script compares exactly with numpy's.
 *   seed S | seedwords W... | next64 N | next32 N | double N | normal N | gauss LOC SCALE N
 *   bounded MAX N | choice N | state | stats HEX... | repr HEX
 * Doubles travel as the hex of their bits.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/npstat.h"
#include "core/pyfmt.h"
#include "core/rng.h"

static uint64_t bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double from_bits(const char *hex)
{
    uint64_t u = strtoull(hex, NULL, 16);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

int main(void)
{
    static char line[1 << 20];
    static double vals[1 << 14];
    bso_rng rng;
    bso_rng_seed(&rng, 0);
    while (fgets(line, sizeof line, stdin)) {
        char *save = NULL;
        char *cmd = strtok_r(line, " \n", &save);
        if (!cmd)
            continue;
        char *a1 = strtok_r(NULL, " \n", &save);
        if (strcmp(cmd, "seed") == 0) {
            bso_rng_seed(&rng, strtoull(a1, NULL, 10));
        } else if (strcmp(cmd, "seedwords") == 0) {
            uint32_t w[BSO_SEEDSEQ_MAX_WORDS];
            size_t n = 0;
            for (char *t = a1; t && n < BSO_SEEDSEQ_MAX_WORDS; t = strtok_r(NULL, " \n", &save))
                w[n++] = (uint32_t)strtoul(t, NULL, 10);
            bso_rng_seed_words(&rng, w, n);
        } else if (strcmp(cmd, "next64") == 0) {
            for (long n = atol(a1); n > 0; n--)
                printf("%" PRIu64 "\n", bso_rng_next64(&rng));
        } else if (strcmp(cmd, "next32") == 0) {
            for (long n = atol(a1); n > 0; n--)
                printf("%" PRIu32 "\n", bso_rng_next32(&rng));
        } else if (strcmp(cmd, "double") == 0) {
            for (long n = atol(a1); n > 0; n--)
                printf("%016" PRIx64 "\n", bits(bso_rng_next_double(&rng)));
        } else if (strcmp(cmd, "normal") == 0) {
            for (long n = atol(a1); n > 0; n--)
                printf("%016" PRIx64 "\n", bits(bso_rng_standard_normal(&rng)));
        } else if (strcmp(cmd, "gauss") == 0) {
            double loc = from_bits(a1);
            double scale = from_bits(strtok_r(NULL, " \n", &save));
            for (long n = atol(strtok_r(NULL, " \n", &save)); n > 0; n--)
                printf("%016" PRIx64 "\n", bits(bso_rng_normal(&rng, loc, scale)));
        } else if (strcmp(cmd, "bounded") == 0) {
            uint64_t max = strtoull(a1, NULL, 10);
            for (long n = atol(strtok_r(NULL, " \n", &save)); n > 0; n--)
                printf("%" PRIu64 "\n", bso_rng_bounded(&rng, max));
        } else if (strcmp(cmd, "choice") == 0) {
            size_t n = (size_t)atol(a1);
            int64_t *items = malloc(n * sizeof(*items)), *out = malloc(n * sizeof(*out));
            for (size_t i = 0; i < n; i++)
                items[i] = (int64_t)i;
            bso_rng_choice_all(&rng, items, n, out);
            for (size_t i = 0; i < n; i++)
                printf("%s%" PRId64, i ? " " : "", out[i]);
            printf("\n");
            free(items);
            free(out);
        } else if (strcmp(cmd, "state") == 0) {
            char buf[BSO_RNG_JSON_MAX];
            bso_rng_to_json(&rng, buf, sizeof buf);
            printf("%s\n", buf);
        } else if (strcmp(cmd, "stats") == 0) {
            size_t n = 0;
            for (char *t = a1; t && n < sizeof vals / sizeof *vals;
                 t = strtok_r(NULL, " \n", &save))
                vals[n++] = from_bits(t);
            printf("%016" PRIx64 " %016" PRIx64 " %016" PRIx64 "\n", bits(bso_np_sum(vals, n)),
                   bits(bso_np_mean(vals, n)), bits(bso_np_var(vals, n)));
        } else if (strcmp(cmd, "repr") == 0) {
            char buf[BSO_PYFLOAT_MAX];
            bso_pyfloat_repr(from_bits(a1), buf, sizeof buf);
            printf("%s\n", buf);
        } else {
            fprintf(stderr, "numpy_oracle_peer: unknown command %s\n", cmd);
            return 2;
        }
    }
    return 0;
}
