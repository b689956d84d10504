/* libFuzzer target for what bso-bench reads off the network (any server's answers): the HTTP
 * answer parser and the readers of predict and report answers. No input may crash them; a
 * complete answer's body stays inside the input. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/api.h"
#include "bench/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bso_http_answer a = {0};
    const int rc = bso_http_parse((const char *)data, size, &a);
    if (rc == 1) {
        if (a.consumed > size || a.body_len > size || strlen(a.body) > a.body_len)
            abort();
        int64_t bs, n;
        bool stop;
        bso_api_read_predict(a.body, &bs, &n);
        bso_api_read_report(a.body, &stop);
    }
    free(a.body);
    return 0;
}
