/*
 * bso-server: opens (and migrates) the database, serves HTTP until SIGINT or SIGTERM, then stops
 * accepting, finishes the requests in flight and closes the database cleanly.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bso/error.h"
#include "server/config.h"
#include "server/http.h"
#include "server/log.h"
#include "server/sweeper.h"
#include "server/import_zeus.h"
#include "server/token_cmd.h"
#include "store/store.h"

static int migrate(const struct bso_config *cfg)
{
    if (cfg->migrate_sql) {
        const char *sql = bso_store_migrations_sql(cfg->database);
        if (!sql) {
            char shown[sizeof cfg->database];
            fprintf(stderr, "bso: unsupported database URL '%s'\n",
                    bso_store_redact_url(cfg->database, shown, sizeof shown));
            return 2;
        }
        fputs(sql, stdout);
        return 0;
    }
    struct bso_store_options opt = {.durability = cfg->durability,
                                    .connections = cfg->db_connections};
    struct bso_store *store;
    char err[512];
    if (bso_store_open(cfg->database, &opt, &store, err, sizeof err) < 0) {
        fprintf(stderr, "bso-server: %s\n", err);
        return 1;
    }
    char shown[sizeof cfg->database];
    printf("%s: schema version %d\n", bso_store_redact_url(cfg->database, shown, sizeof shown),
           bso_store_schema_version(store));
    bso_store_close(store);
    return 0;
}

static int serve(const struct bso_config *cfg)
{
    /* Block the stop signals in every thread (workers inherit the mask) and wait for them here. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct bso_store_options opt = {.durability = cfg->durability,
                                    .connections = cfg->db_connections,
                                    .cache_bytes = (size_t)cfg->cache_mb << 20};
    struct bso_store *store;
    char err[512];
    if (bso_store_open(cfg->database, &opt, &store, err, sizeof err) < 0) {
        log_error("%s", err);
        return 1;
    }
    struct bso_server *srv;
    if (bso_server_start(cfg, store, &srv, err, sizeof err) < 0) {
        log_error("%s", err);
        bso_store_close(store);
        return 1;
    }
    char shown[sizeof cfg->database];
    log_info("bso-server %s listening on %s://%s:%d (database %s, schema %d, %d threads)",
             BSO_VERSION, cfg->tls_cert[0] ? "https" : "http", cfg->host, bso_server_port(srv),
             bso_store_redact_url(cfg->database, shown, sizeof shown),
             bso_store_schema_version(store), cfg->threads);

    struct bso_sweeper *sweeper = bso_sweeper_start(store, cfg);
    if (!sweeper)
        log_error("cannot start the trial lease sweeper: waiting trials will not expire");

    int sig = 0;
    sigwait(&stop, &sig);
    log_info("received %s: finishing requests in flight", sig == SIGINT ? "SIGINT" : "SIGTERM");
    bso_sweeper_stop(sweeper);
    bso_server_stop(srv);
    bso_store_close(store);
    log_info("stopped");
    return 0;
}

int main(int argc, char **argv)
{
    struct bso_config cfg;
    char err[512];
    if (bso_config_load(&cfg, argc, argv, NULL, err, sizeof err) < 0) {
        fprintf(stderr, "bso-server: %s\n", err);
        return 2;
    }
    switch (cfg.command) {
    case BSO_CMD_HELP:
        fputs(bso_config_usage(), stdout);
        return 0;
    case BSO_CMD_VERSION:
        printf("bso-server %s\n", BSO_VERSION);
        return 0;
    case BSO_CMD_MIGRATE:
        return migrate(&cfg);
    case BSO_CMD_TOKEN:
        return bso_token_command(&cfg);
    case BSO_CMD_IMPORT_ZEUS:
        return bso_import_zeus_command(&cfg);
    case BSO_CMD_SERVE:
        break;
    }
    bso_log_setup(cfg.log_level, cfg.log_format, 2);
    return serve(&cfg);
}
