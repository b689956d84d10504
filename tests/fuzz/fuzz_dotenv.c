/* libFuzzer target for the .env reader: no input may crash it, and every key it keeps must be
 * found again. */
#include "fuzz_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/dotenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    struct bso_dotenv env;
    char err[256];
    if (bso_dotenv_parse(text, "fuzz.env", &env, err, sizeof err) == 0) {
        for (size_t i = 0; i < env.n; i++)
            if (!bso_dotenv_get(&env, env.key[i]))
                abort();
        bso_dotenv_free(&env);
    }
    free(text);
    return 0;
}
