/* Reading a Zeus BSO database; see zeus_db.h. */
#include "store/zeus_db.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"

struct bso_zeus_db {
    sqlite3 *lite; /* one of the two */
    PGconn *pg;
    char errmsg[512];
};

/* ---- row accessors ---- */

static const char *lite_text(const void *ctx, int col)
{
    const unsigned char *t = sqlite3_column_text((sqlite3_stmt *)ctx, col);
    return t ? (const char *)t : "";
}

static int64_t lite_i64(const void *ctx, int col)
{
    return sqlite3_column_int64((sqlite3_stmt *)ctx, col);
}

static double lite_f64(const void *ctx, int col)
{
    return sqlite3_column_double((sqlite3_stmt *)ctx, col);
}

static bool lite_null(const void *ctx, int col)
{
    return sqlite3_column_type((sqlite3_stmt *)ctx, col) == SQLITE_NULL;
}

struct pg_row {
    const PGresult *res;
    int row;
};

static const char *pg_text(const void *ctx, int col)
{
    const struct pg_row *r = ctx;
    return PQgetvalue(r->res, r->row, col);
}

static int64_t pg_i64(const void *ctx, int col)
{
    return strtoll(pg_text(ctx, col), NULL, 10);
}

/* PostgreSQL prints floats exactly (shortest round trip) and infinity as "Infinity". */
static double pg_f64(const void *ctx, int col)
{
    return strtod(pg_text(ctx, col), NULL);
}

static bool pg_null(const void *ctx, int col)
{
    const struct pg_row *r = ctx;
    return PQgetisnull(r->res, r->row, col) != 0;
}

/* ---- opening ---- */

/* The part of url after "scheme[+driver]://" when its scheme is `scheme`, else NULL. */
static const char *after_scheme(const char *url, const char *scheme)
{
    const size_t n = strlen(scheme);
    if (strncmp(url, scheme, n) != 0 || (url[n] != ':' && url[n] != '+'))
        return NULL;
    const char *rest = strstr(url + n, "://");
    return rest ? rest + 3 : NULL;
}

int bso_zeus_db_open(const char *url, struct bso_zeus_db **out, char *err, size_t errcap)
{
    *out = NULL;
    struct bso_zeus_db *db = calloc(1, sizeof *db);
    if (!db) {
        snprintf(err, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    const char *rest;
    if ((rest = after_scheme(url, "sqlite")) != NULL) {
        /* sqlite:///relative or sqlite:////absolute, as SQLAlchemy reads them. */
        const char *path = rest[0] == '/' ? rest + 1 : rest;
        if (!path[0]) {
            snprintf(err, errcap, "%s: no file named (sqlite:///PATH)", url);
            free(db);
            return BSO_EINVAL;
        }
        if (sqlite3_open_v2(path, &db->lite, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
            snprintf(err, errcap, "cannot open %s: %s", path,
                     db->lite ? sqlite3_errmsg(db->lite) : "out of memory");
            sqlite3_close(db->lite);
            free(db);
            return BSO_EIO;
        }
        sqlite3_busy_timeout(db->lite, 5000);
    } else if ((rest = after_scheme(url, "postgresql")) != NULL ||
               (rest = after_scheme(url, "postgres")) != NULL) {
        char conninfo[2048];
        if (snprintf(conninfo, sizeof conninfo, "postgresql://%s", rest) >= (int)sizeof conninfo) {
            snprintf(err, errcap, "the database URL is too long");
            free(db);
            return BSO_EINVAL;
        }
        db->pg = PQconnectdb(conninfo);
        if (!db->pg || PQstatus(db->pg) != CONNECTION_OK) {
            snprintf(err, errcap, "cannot connect to the Zeus database: %s",
                     db->pg ? PQerrorMessage(db->pg) : "out of memory");
            PQfinish(db->pg);
            free(db);
            return BSO_EIO;
        }
        PGresult *r = PQexec(db->pg, "SET default_transaction_read_only = on");
        PQclear(r);
    } else {
        snprintf(err, errcap,
                 "%s: not a database URL this import reads (sqlite:///PATH or "
                 "postgresql://...; for MySQL, which no packaged client library here reads, copy "
                 "the four tables into SQLite first)",
                 strncmp(url, "mysql", 5) == 0 ? "MySQL" : url);
        free(db);
        return BSO_EINVAL;
    }
    *out = db;
    return 0;
}

void bso_zeus_db_close(struct bso_zeus_db *db)
{
    if (!db)
        return;
    sqlite3_close(db->lite);
    PQfinish(db->pg);
    free(db);
}

const char *bso_zeus_db_errmsg(const struct bso_zeus_db *db)
{
    return db->errmsg;
}

/* ---- reading ---- */

int bso_zeus_db_query(struct bso_zeus_db *db, const char *sql,
                      int (*fn)(void *ctx, const struct bso_row *r), void *ctx)
{
    int cb = 0;
    if (db->lite) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db->lite, sql, -1, &st, NULL) != SQLITE_OK) {
            snprintf(db->errmsg, sizeof db->errmsg, "%s", sqlite3_errmsg(db->lite));
            return BSO_EIO;
        }
        const struct bso_row row = {st, lite_text, lite_i64, lite_f64, lite_null};
        int rc;
        while (cb == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
            cb = fn(ctx, &row);
        if (cb == 0 && rc != SQLITE_DONE) {
            snprintf(db->errmsg, sizeof db->errmsg, "%s", sqlite3_errmsg(db->lite));
            cb = BSO_EIO;
        }
        sqlite3_finalize(st);
        return cb;
    }
    PGresult *res = PQexec(db->pg, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        snprintf(db->errmsg, sizeof db->errmsg, "%s", PQerrorMessage(db->pg));
        PQclear(res);
        return BSO_EIO;
    }
    struct pg_row at = {res, 0};
    const struct bso_row row = {&at, pg_text, pg_i64, pg_f64, pg_null};
    for (at.row = 0; cb == 0 && at.row < PQntuples(res); at.row++)
        cb = fn(ctx, &row);
    PQclear(res);
    return cb;
}

struct column_ctx {
    int (*fn)(void *ctx, const char *column);
    void *ctx;
};

static int one_column(void *ctx, const struct bso_row *r)
{
    const struct column_ctx *c = ctx;
    return c->fn(c->ctx, r->text(r->ctx, 0));
}

int bso_zeus_db_columns(struct bso_zeus_db *db, const char *table,
                        int (*fn)(void *ctx, const char *column), void *ctx)
{
    /* Zeus's table names are letters only: safe to place in the SQL. */
    for (const char *p = table; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
            return BSO_EINVAL;
    char sql[256];
    if (db->lite)
        snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s')", table);
    else
        snprintf(sql, sizeof sql,
                 "SELECT column_name FROM information_schema.columns WHERE table_name = '%s'"
                 " AND table_schema = current_schema()",
                 table);
    struct column_ctx c = {fn, ctx};
    return bso_zeus_db_query(db, sql, one_column, &c);
}
