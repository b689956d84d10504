/*
 * Who sent a request. API tokens ("bso_" and 48 hex characters) are stored as their SHA-256
 * only; a request carries one as `Authorization: Bearer <token>`. Each token belongs to a
 * tenant, and an admin token sees every tenant's jobs.
 *
 * Authentication is on unless the server runs with --insecure-no-auth. While the database
 * holds no active token a server on a loopback address serves everyone as before (Zeus's
 * clients, which cannot send a token, keep working); one bound elsewhere refuses to start
 * without tokens, and refuses requests should they all be revoked later.
 *
 * What the database says is remembered for a second (BSO_AUTH_TTL_MS), so a request costs no
 * query and a revocation takes effect on every replica within that time.
 */
#ifndef BSO_SERVER_AUTH_H
#define BSO_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/spec.h"
#include "store/store.h"

#define BSO_AUTH_TTL_MS 1000
#define BSO_TOKEN_LEN 52 /* "bso_" + 48 hex */

struct bso_principal {
    bool admin;                      /* sees every job */
    char tenant[BSO_TENANT_MAX + 1]; /* owns the jobs it registers; "" without a token */
};

struct bso_auth;

enum bso_auth_mode {
    BSO_AUTH_OFF,      /* --insecure-no-auth: every request is an admin */
    BSO_AUTH_LOOPBACK, /* tokens once any exist; without tokens, open */
    BSO_AUTH_REQUIRED, /* tokens, always */
};

/* Checks against store (which must outlive it). NULL when out of memory. */
struct bso_auth *bso_auth_new(struct bso_store *store, enum bso_auth_mode mode);
/* NULL is a no-op. */
void bso_auth_free(struct bso_auth *a);

/* Who sends a request with this Authorization header (NULL when absent): 0 with *who set;
 * BSO_EINVAL (answer 401) or BSO_EIO (503) with a sentence in msg. */
int bso_auth_check(struct bso_auth *a, const char *authorization, struct bso_principal *who,
                   char *msg, size_t cap);

/* A new random token (BSO_TOKEN_LEN + 1 bytes). */
int bso_token_generate(char token[BSO_TOKEN_LEN + 1]);
/* The stored form of a token: its SHA-256 in hex. */
void bso_token_hash(const char *token, char hash[65]);

#endif
