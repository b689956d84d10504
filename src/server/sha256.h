/* SHA-256 (FIPS 180-4), for storing API tokens by their digest. */
#ifndef BSO_SERVER_SHA256_H
#define BSO_SERVER_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* The digest of data[0..len) in out. */
void bso_sha256(const void *data, size_t len, uint8_t out[32]);
/* The digest as 64 lowercase hex characters and a NUL. */
void bso_sha256_hex(const void *data, size_t len, char out[65]);

#endif
