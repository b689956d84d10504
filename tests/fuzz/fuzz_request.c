/* libFuzzer target for the server's request bodies: the first byte picks the endpoint (POST
 * /jobs, POST /report, PATCH /trials), the rest is the body. No input may crash a decoder; an
 * accepted spec must be valid, and its echo must be well-formed JSON. */
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
    switch (data[0] % 3) {
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
    default: {
        struct bso_report_req req;
        bso_decode_trial_id(body, len, &req, ds);
        break;
    }
    }
    if (ds->n > BSO_MAX_DETAILS)
        abort();
    free(ds);
    return 0;
}
