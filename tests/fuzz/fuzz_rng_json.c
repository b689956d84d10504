/* libFuzzer target for the RNG-state JSON reader: no input may crash it, and an accepted state
 * must survive a write/read round trip. Built with -DBSO_FUZZ=ON under clang. */
#include "fuzz_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    bso_rng a, b;
    if (bso_rng_from_json(&a, text) == 0) {
        char buf[BSO_RNG_JSON_MAX];
        if (bso_rng_to_json(&a, buf, sizeof buf) < 0 || bso_rng_from_json(&b, buf) != 0 ||
            a.state != b.state || a.inc != b.inc || a.has_uint32 != b.has_uint32 ||
            a.uinteger != b.uinteger)
            abort();
    }
    free(text);
    return 0;
}
