/*
 * bso-server's settings: built-in defaults, then a .env file in the working directory, then the
 * environment, then command-line flags, each overriding the one before. Zeus's variables
 * (ZEUS_BSO_DATABASE_URL, ZEUS_BSO_LOG_LEVEL) are read where the BSO_ ones are unset, so an
 * existing deployment switches by changing the binary only.
 */
#ifndef BSO_SERVER_CONFIG_H
#define BSO_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/spec.h"

#include "server/log.h"
#include "store/store.h"

struct bso_config {
    char database[4096];
    char host[256];
    int port;
    enum bso_log_level log_level;
    enum bso_log_format log_format;
    int threads;
    bool threads_set; /* given explicitly (else a default that depends on the database) */
    enum bso_durability durability;
    int default_policy; /* enum bso_policy: for jobs registered without a "policy" field */
    size_t max_body;    /* bytes */
    int max_connections;
    int max_per_client;    /* connections from one IP address; 0: no limit */
    int db_connections;    /* 0: one per worker thread */
    int timeout_s;         /* idle connection timeout */
    int request_timeout_s; /* longest time a request may take to arrive */
    int cache_mb;          /* memory for jobs kept in memory; 0: none */
    int lease_floor_s;     /* a waiting trial's lease is never shorter */
    int lease_default_s;   /* the lease of a job none of whose runs has finished yet */
    /* What to do: serve, or migrate. */
    enum {
        BSO_CMD_SERVE,
        BSO_CMD_MIGRATE,
        BSO_CMD_TOKEN,
        BSO_CMD_IMPORT_ZEUS,
        BSO_CMD_HELP,
        BSO_CMD_VERSION
    } command;
    bool migrate_sql;      /* print the migration SQL instead of applying it */
    bool insecure_no_auth; /* serve without tokens on any address */
    char tls_cert[4096];   /* PEM files: HTTPS when both are set */
    char tls_key[4096];
    /* bso-server token create|list|revoke */
    char token_action[8];
    char token_tenant[BSO_TENANT_MAX + 1];
    bool token_admin;
    int64_t token_id;
    /* bso-server import-zeus */
    char import_from[2048];                 /* the Zeus database's URL */
    char import_prefix[BSO_JOB_ID_MAX + 1]; /* only jobs whose id starts so ("": all) */
    bool import_dry_run;
    bool import_replace; /* overwrite jobs that exist here and differ */
};

/* Fills *cfg from defaults, dotenv_path (NULL: ".env"), environ and argv. On bad input returns
 * BSO_EINVAL with a one-line reason in err. */
int bso_config_load(struct bso_config *cfg, int argc, char **argv, const char *dotenv_path,
                    char *err, size_t errcap);

/* The --help text. */
const char *bso_config_usage(void);

#endif
