/*
 * A database written by Zeus's BSO server, opened read-only for `bso-server import-zeus`: its
 * tables ("Job", "BatchSize", "Trial", "GaussianTsArmState") read row by row through the same
 * struct bso_row accessors as our own stores, from SQLite or PostgreSQL.
 */
#ifndef BSO_STORE_ZEUS_DB_H
#define BSO_STORE_ZEUS_DB_H

#include <stddef.h>

#include "store/columns.h"

struct bso_zeus_db;

/* Opens url as Zeus's server takes it (ZEUS_BSO_DATABASE_URL): sqlite[+driver]:///PATH,
 * postgresql[+driver]://... or mysql[+driver]://user:pw@host:port/db (when built with
 * libmariadb), for reading only. BSO_EINVAL (err says why) for another scheme,
 * BSO_EIO when it cannot be opened. */
int bso_zeus_db_open(const char *url, struct bso_zeus_db **out, char *err, size_t errcap);
/* NULL is a no-op. */
void bso_zeus_db_close(struct bso_zeus_db *db);

/* Calls fn with each column name of table (as Zeus names it, e.g. "Job"); none when the table
 * does not exist. fn returning non-zero stops and is returned. */
int bso_zeus_db_columns(struct bso_zeus_db *db, const char *table,
                        int (*fn)(void *ctx, const char *column), void *ctx);

/* Runs sql (a SELECT without parameters) and calls fn with each row. fn returning non-zero
 * stops and is returned; BSO_EIO when the query fails (bso_zeus_db_errmsg says why). A NULL
 * reads as 0, 0.0 or "" (null() tells). */
int bso_zeus_db_query(struct bso_zeus_db *db, const char *sql,
                      int (*fn)(void *ctx, const struct bso_row *r), void *ctx);

/* Why the last call failed. */
const char *bso_zeus_db_errmsg(const struct bso_zeus_db *db);

#endif
