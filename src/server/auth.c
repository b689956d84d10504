/* Token checks with a short-lived memory of the database's answers; see auth.h. */
#include "server/auth.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bso/error.h"
#include "os/os.h"
#include "server/log.h"
#include "server/sha256.h"

#define SLOTS 256 /* remembered tokens, by the first byte of their hash */

struct slot {
    char hash[65];
    bool known; /* an active token (else: no such token, or revoked) */
    struct bso_principal who;
    double until; /* monotonic seconds */
};

struct bso_auth {
    struct bso_store *store;
    enum bso_auth_mode mode;
    pthread_mutex_t lock;
    int64_t active; /* active tokens in the database */
    double active_until;
    struct slot slots[SLOTS];
};

struct bso_auth *bso_auth_new(struct bso_store *store, enum bso_auth_mode mode)
{
    struct bso_auth *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->store = store;
    a->mode = mode;
    pthread_mutex_init(&a->lock, NULL);
    return a;
}

void bso_auth_free(struct bso_auth *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->lock);
    free(a);
}

int bso_token_generate(char token[BSO_TOKEN_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint32_t w[6];
    if (bso_os_entropy(w, 6) < 0)
        return BSO_EIO;
    memcpy(token, "bso_", 4);
    for (int i = 0; i < 48; i++)
        token[4 + i] = hex[(w[i / 8] >> (4 * (i % 8))) & 15];
    token[BSO_TOKEN_LEN] = '\0';
    return 0;
}

void bso_token_hash(const char *token, char hash[65])
{
    bso_sha256_hex(token, strlen(token), hash);
}

/* Asks the database (a session of its own, outside any transaction). */
static int ask(struct bso_auth *a, const char *hash, struct slot *out, int64_t *active)
{
    struct bso_session *s;
    if (bso_store_session(a->store, &s) < 0)
        return BSO_EIO;
    int rc = active ? bso_session_token_count(s, active) : 0;
    if (rc == 0 && hash) {
        struct bso_token t;
        rc = bso_session_token_find(s, hash, &t);
        out->known = rc == 0;
        if (rc == 0) {
            out->who.admin = t.admin;
            snprintf(out->who.tenant, sizeof out->who.tenant, "%s", t.tenant);
        }
        if (rc == BSO_ENOTFOUND)
            rc = 0;
    }
    if (rc < 0)
        log_error("auth: %s", bso_session_errmsg(s));
    bso_session_release(s);
    return rc;
}

/* How many active tokens the database holds, as of at most a second ago. */
static int active_tokens(struct bso_auth *a, int64_t *n)
{
    const double now = bso_os_monotonic_s();
    pthread_mutex_lock(&a->lock);
    const bool fresh = now < a->active_until;
    *n = a->active;
    pthread_mutex_unlock(&a->lock);
    if (fresh)
        return 0;
    const int rc = ask(a, NULL, NULL, n);
    if (rc == 0) {
        pthread_mutex_lock(&a->lock);
        a->active = *n;
        a->active_until = now + BSO_AUTH_TTL_MS / 1e3;
        pthread_mutex_unlock(&a->lock);
    }
    return rc;
}

/* What the database says of the token with this hash, as of at most a second ago. */
static int lookup(struct bso_auth *a, const char *hash, struct slot *out)
{
    const double now = bso_os_monotonic_s();
    struct slot *slot = &a->slots[strtoul((char[3]){hash[0], hash[1], 0}, NULL, 16) % SLOTS];
    pthread_mutex_lock(&a->lock);
    const bool hit = now < slot->until && strcmp(slot->hash, hash) == 0;
    if (hit)
        *out = *slot;
    pthread_mutex_unlock(&a->lock);
    if (hit)
        return 0;
    memset(out, 0, sizeof *out);
    const int rc = ask(a, hash, out, NULL);
    if (rc == 0) {
        snprintf(out->hash, sizeof out->hash, "%s", hash);
        out->until = now + BSO_AUTH_TTL_MS / 1e3;
        pthread_mutex_lock(&a->lock);
        *slot = *out;
        pthread_mutex_unlock(&a->lock);
    }
    return rc;
}

/* Decodes standard base64 (padding optional) into out (cap bytes, NUL-terminated); false on a
 * character outside the alphabet or too long an input. */
static bool base64_decode(const char *in, char *out, size_t cap)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;
    for (; *in && *in != '='; in++) {
        const char *p = strchr(alphabet, *in);
        if (!p)
            return false;
        acc = (acc << 6) | (uint32_t)(p - alphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n + 1 >= cap)
                return false;
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[n] = '\0';
    return strlen(out) == n; /* no NUL inside */
}

/* The token in an Authorization header: 'Bearer TOKEN', or HTTP Basic credentials with the
 * token as user name (what a client sends for http://TOKEN@host, Zeus's client included) or,
 * with an empty user name, as password. false when the header is neither. */
static bool token_of(const char *authorization, char *token, size_t cap)
{
    if (strncasecmp(authorization, "Bearer ", 7) == 0) {
        const char *t = authorization + 7;
        while (*t == ' ')
            t++;
        return snprintf(token, cap, "%s", t) < (int)cap;
    }
    if (strncasecmp(authorization, "Basic ", 6) != 0)
        return false;
    const char *b = authorization + 6;
    while (*b == ' ')
        b++;
    char pair[512];
    if (!base64_decode(b, pair, sizeof pair))
        return false;
    char *colon = strchr(pair, ':');
    if (colon)
        *colon = '\0';
    const char *t = pair[0] || !colon ? pair : colon + 1;
    /* The user name of a URL arrives percent-encoded where it had to be; tokens never need it. */
    return snprintf(token, cap, "%s", t) < (int)cap;
}

int bso_auth_check(struct bso_auth *a, const char *authorization, struct bso_principal *who,
                   char *msg, size_t cap)
{
    memset(who, 0, sizeof *who);
    if (a->mode == BSO_AUTH_OFF) {
        who->admin = true;
        return 0;
    }
    int64_t active;
    if (active_tokens(a, &active) < 0) {
        snprintf(msg, cap, "The database is unavailable; try again.");
        return BSO_EIO;
    }
    if (!authorization || !*authorization) {
        if (active == 0 && a->mode == BSO_AUTH_LOOPBACK) {
            who->admin = true; /* no tokens yet, local clients only */
            return 0;
        }
        snprintf(msg, cap,
                 "This server requires an API token: send 'Authorization: Bearer <token>' "
                 "(BSO_TOKEN for bso's clients).");
        return BSO_EINVAL;
    }
    char token[256];
    if (!token_of(authorization, token, sizeof token)) {
        snprintf(msg, cap,
                 "The Authorization header must be 'Bearer <token>', or Basic credentials with "
                 "the token as user name (http://TOKEN@host:port).");
        return BSO_EINVAL;
    }
    char hash[65];
    bso_token_hash(token, hash);
    struct slot found;
    if (lookup(a, hash, &found) < 0) {
        snprintf(msg, cap, "The database is unavailable; try again.");
        return BSO_EIO;
    }
    if (!found.known) {
        snprintf(msg, cap, "The API token is not valid (unknown or revoked).");
        return BSO_EINVAL;
    }
    *who = found.who;
    return 0;
}
