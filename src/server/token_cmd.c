/* `bso-server token create|list|revoke`: API tokens, written straight into the database beside
 * a running server (which notices within a second, auth.h). */
#include "server/token_cmd.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bso/error.h"
#include "server/auth.h"
#include "store/store.h"

static int print_token(void *ctx, const struct bso_token *t)
{
    (void)ctx;
    printf("%-6" PRId64 " %-20s %-6s %-16s %-25s %s\n", t->id, t->tenant, t->admin ? "admin" : "-",
           t->hint, t->created_at, t->revoked_at[0] ? t->revoked_at : "active");
    return 0;
}

static int run(const struct bso_config *cfg, struct bso_session *s)
{
    int rc;
    if (strcmp(cfg->token_action, "create") == 0) {
        char token[BSO_TOKEN_LEN + 1], hash[65];
        if ((rc = bso_token_generate(token)) < 0)
            return rc;
        bso_token_hash(token, hash);
        struct bso_token t = {.admin = cfg->token_admin};
        snprintf(t.tenant, sizeof t.tenant, "%s", cfg->token_tenant);
        snprintf(t.hint, sizeof t.hint, "%.12s", token);
        int64_t id;
        if ((rc = bso_session_token_insert(s, &t, hash, &id)) < 0)
            return rc;
        printf("%s\n", token);
        fprintf(stderr,
                "token %" PRId64 " for tenant %s%s. It is shown only now: keep it secret (clients "
                "read it from BSO_TOKEN).\n",
                id, t.tenant, t.admin ? " (admin)" : "");
        return 0;
    }
    if (strcmp(cfg->token_action, "list") == 0) {
        printf("%-6s %-20s %-6s %-16s %-25s %s\n", "ID", "TENANT", "ADMIN", "STARTS WITH",
               "CREATED", "REVOKED");
        return bso_session_token_list(s, cfg->token_tenant[0] ? cfg->token_tenant : NULL,
                                      print_token, NULL);
    }
    int64_t n = 0;
    rc = bso_session_token_revoke(s, cfg->token_id, cfg->token_tenant[0] ? cfg->token_tenant : NULL,
                                  &n);
    if (rc < 0)
        return rc;
    if (n == 0) {
        fprintf(stderr, "bso-server: no active token matched\n");
        return BSO_ENOTFOUND;
    }
    printf("revoked %" PRId64 " token%s\n", n, n == 1 ? "" : "s");
    return 0;
}

int bso_token_command(const struct bso_config *cfg)
{
    struct bso_store_options opt = {.durability = cfg->durability, .tool = true};
    struct bso_store *store;
    char err[512];
    if (bso_store_open(cfg->database, &opt, &store, err, sizeof err) < 0) {
        fprintf(stderr, "bso-server: %s\n", err);
        return 1;
    }
    struct bso_session *s;
    int rc = bso_store_session(store, &s);
    if (rc == 0) {
        rc = run(cfg, s);
        if (rc < 0 && rc != BSO_ENOTFOUND)
            fprintf(stderr, "bso-server: token %s: %s\n", cfg->token_action, bso_session_errmsg(s));
        bso_session_release(s);
    }
    bso_store_close(store);
    return rc < 0 ? 1 : 0;
}
