/* libFuzzer target for the server's request bodies: the first byte picks the endpoint (POST
 * /jobs, POST /report, PATCH /trials by its value modulo 3; from 0xf8 up, POST /jobs/ID/profile
 * and POST /jobs/ID/power), the rest is the body. No input may crash a decoder; an accepted
 * spec must be valid, and its echo must be well-formed JSON; an accepted power profile has 1 to
 * 16 distinct, positive limits. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/codec.h"
#include "server/jbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *body = (const char *)data + 1;
    const size_t len = size - 1;
    struct bso_details *ds = calloc(1, sizeof *ds);
    if (!ds)
        return 0;
    switch (data[0] >= 0xf8 ? 3 + (data[0] & 1) : data[0] % 3) {
    case 0: {
        struct bso_job_spec spec;
        if (bso_decode_spec(body, len, &spec, ds) == 0) {
            struct bso_spec_errors errs = {0};
            if (bso_job_spec_validate(&spec, &errs) != 0)
                abort(); /* accepted means valid */
            struct jbuf b;
            jb_init(&b);
            bso_encode_spec(&b, &spec);
            size_t n;
            char *text = jb_take(&b, &n);
            json_t *echo = text ? json_loadb(text, n, 0, NULL) : NULL;
            if (text && !echo)
                abort(); /* the echo is JSON */
            json_decref(echo);
            free(text);
        }
        break;
    }
    case 1: {
        struct bso_report_req req;
        bso_decode_report(body, len, &req, ds);
        break;
    }
    case 2: {
        struct bso_report_req req;
        bso_decode_trial_id(body, len, &req, ds);
        break;
    }
    case 3: {
        struct bso_profile_entry *e = calloc(BSO_MAX_BATCH_SIZES, sizeof *e);
        size_t n;
        if (e)
            bso_decode_profile(body, len, e, &n, ds);
        free(e);
        break;
    }
    default: {
        struct bso_power_profile p;
        if (bso_decode_power(body, len, &p, ds) == 0) {
            if (p.n < 1 || p.n > BSO_POWER_MAX_LIMITS)
                abort();
            for (size_t i = 0; i < p.n; i++) {
                if (!(p.points[i].limit_w > 0) || !(p.points[i].samples_per_s >= 0))
                    abort();
                for (size_t k = 0; k < i; k++)
                    if (p.points[k].limit_w == p.points[i].limit_w)
                        abort();
            }
        }
        break;
    }
    }
    if (ds->n > BSO_MAX_DETAILS)
        abort();
    free(ds);
    return 0;
}
