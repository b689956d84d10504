/* libFuzzer target for libbso's readers of the server's answers (src/client/answer.c): the
 * first byte picks the reader (register, next, report, error), the rest is the body. No input
 * may crash them; every text they write stays NUL-terminated inside its buffer, and a body they
 * accept yields values the client can use. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "client/answer.h"
#include "fuzz_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    char *body = fuzz_text(data + 1, size - 1);
    if (!body)
        return 0;
    char why[256];
    memset(why, 'x', sizeof why);
    why[sizeof why - 1] = '\0';
    switch (data[0] % 4) {
    case 0: {
        char id[BSO_CLIENT_ID_MAX];
        if (bso_answer_register(body, id, why, sizeof why) == 0 &&
            (strnlen(id, sizeof id) == sizeof id || id[0] == '\0'))
            abort();
        break;
    }
    case 1: {
        int64_t bs = 0, n = 0;
        if (bso_answer_next(body, &bs, &n, why, sizeof why) == 0 && (bs <= 0 || n <= 0))
            abort();
        break;
    }
    case 2: {
        struct bso_report_answer a;
        if (bso_answer_report(body, &a, why, sizeof why) == 0 &&
            strnlen(a.message, sizeof a.message) == sizeof a.message)
            abort();
        break;
    }
    default: {
        char msg[64];
        bso_answer_error(body, msg, sizeof msg);
        if (strnlen(msg, sizeof msg) == sizeof msg || msg[0] == '\0')
            abort();
        break;
    }
    }
    if (strnlen(why, sizeof why) == sizeof why)
        abort();
    free(body);
    return 0;
}
