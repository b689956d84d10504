/* libFuzzer target for database and server URLs: choosing a backend, hiding a password and
 * splitting a server URL must never crash or overrun, and a redacted URL never grows by more
 * than "***". */
#include "fuzz_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/http.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *url = fuzz_text(data, size);
    if (!url)
        return 0;
    char shown[8192], host[256], port[16];
    bso_store_redact_url(url, shown, sizeof shown);
    if (size < sizeof shown - 4 && strlen(shown) > strlen(url) + 3)
        abort();
    bso_store_migrations_sql(url);
    bso_http_split_url(url, host, sizeof host, port, sizeof port);
    free(url);
    return 0;
}
