/*
 * The RNG state as JSON, in the exact text Zeus stores (Python's json.dumps of numpy's
 * bit_generator.state). The numbers are 128-bit, beyond what JSON libraries keep exactly,
 * so this small object has its own reader and writer.
 */
#include <stdio.h>
#include <string.h>

#include "bso/error.h"
#include "core/rng.h"

int bso_rng_to_json(const bso_rng *rng, char *buf, size_t cap)
{
    char s[48], inc[48];
    if (bso_u128_to_dec(rng->state, s, sizeof s) < 0 ||
        bso_u128_to_dec(rng->inc, inc, sizeof inc) < 0)
        return BSO_ERANGE;
    int n = snprintf(buf, cap,
                     "{\"bit_generator\": \"PCG64\", \"state\": {\"state\": %s, \"inc\": %s}, "
                     "\"has_uint32\": %d, \"uinteger\": %u}",
                     s, inc, rng->has_uint32 ? 1 : 0, (unsigned)rng->uinteger);
    if (n < 0 || (size_t)n >= cap)
        return BSO_ERANGE;
    return n;
}

/* A cursor over the JSON text. */
struct cur {
    const char *p;
};

static void skip_ws(struct cur *c)
{
    while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')
        c->p++;
}

static int expect(struct cur *c, char ch)
{
    skip_ws(c);
    if (*c->p != ch)
        return BSO_EPARSE;
    c->p++;
    return 0;
}

/* Reads a JSON string without escapes into buf (keys and "PCG64" need none). */
static int read_string(struct cur *c, char *buf, size_t cap)
{
    if (expect(c, '"') < 0)
        return BSO_EPARSE;
    size_t n = 0;
    while (*c->p != '"') {
        if (*c->p == '\0' || *c->p == '\\' || n + 1 >= cap)
            return BSO_EPARSE;
        buf[n++] = *c->p++;
    }
    c->p++;
    buf[n] = '\0';
    return 0;
}

static int read_u128(struct cur *c, bso_u128 *v)
{
    size_t used;
    skip_ws(c);
    int rc = bso_u128_from_dec(c->p, v, &used);
    if (rc < 0)
        return rc;
    c->p += used;
    /* A fraction or exponent would make it a float, which the state never is. */
    if (*c->p == '.' || *c->p == 'e' || *c->p == 'E')
        return BSO_EPARSE;
    return 0;
}

enum { SEEN_GEN = 1, SEEN_STATE = 2, SEEN_INC = 4, SEEN_HAS = 8, SEEN_UINT = 16, SEEN_ALL = 31 };

static int read_inner(struct cur *c, bso_rng *r, unsigned *seen)
{
    if (expect(c, '{') < 0)
        return BSO_EPARSE;
    for (;;) {
        char key[16];
        if (read_string(c, key, sizeof key) < 0 || expect(c, ':') < 0)
            return BSO_EPARSE;
        int rc;
        if (strcmp(key, "state") == 0) {
            rc = read_u128(c, &r->state);
            *seen |= SEEN_STATE;
        } else if (strcmp(key, "inc") == 0) {
            rc = read_u128(c, &r->inc);
            *seen |= SEEN_INC;
        } else {
            return BSO_EPARSE;
        }
        if (rc < 0)
            return rc;
        skip_ws(c);
        if (*c->p == ',') {
            c->p++;
            continue;
        }
        return expect(c, '}');
    }
}

int bso_rng_from_json(bso_rng *rng, const char *json)
{
    struct cur c = {json};
    bso_rng r = {0};
    unsigned seen = 0;
    bool pcg64 = false;
    if (!json || expect(&c, '{') < 0)
        return BSO_EPARSE;
    for (;;) {
        char key[16];
        if (read_string(&c, key, sizeof key) < 0 || expect(&c, ':') < 0)
            return BSO_EPARSE;
        int rc = 0;
        if (strcmp(key, "bit_generator") == 0) {
            char name[16];
            rc = read_string(&c, name, sizeof name);
            pcg64 = rc == 0 && strcmp(name, "PCG64") == 0;
            seen |= SEEN_GEN;
        } else if (strcmp(key, "state") == 0) {
            rc = read_inner(&c, &r, &seen);
        } else if (strcmp(key, "has_uint32") == 0 || strcmp(key, "uinteger") == 0) {
            bso_u128 v;
            rc = read_u128(&c, &v);
            if (rc == 0 && key[0] == 'h') {
                if (v > 1)
                    return BSO_EINVAL;
                r.has_uint32 = v == 1;
                seen |= SEEN_HAS;
            } else if (rc == 0) {
                if (v > UINT32_MAX)
                    return BSO_EINVAL;
                r.uinteger = (uint32_t)v;
                seen |= SEEN_UINT;
            }
        } else {
            return BSO_EPARSE;
        }
        if (rc < 0)
            return rc;
        skip_ws(&c);
        if (*c.p == ',') {
            c.p++;
            continue;
        }
        if (expect(&c, '}') < 0)
            return BSO_EPARSE;
        break;
    }
    skip_ws(&c);
    if (*c.p != '\0' || seen != SEEN_ALL)
        return BSO_EPARSE;
    if (!pcg64 || (r.inc & 1u) == 0) /* PCG increments are always odd */
        return BSO_EINVAL;
    *rng = r;
    return 0;
}
