/* Reading a Zeus BSO database; see zeus_db.h. */
#include "store/zeus_db.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "store/sql_rows.h"

#ifdef BSO_HAVE_MARIADB
#include <mysql.h>
#endif

struct bso_zeus_db {
    sqlite3 *lite; /* one of the three */
    PGconn *pg;
#ifdef BSO_HAVE_MARIADB
    MYSQL *my;
#endif
    char errmsg[512];
};

/* ---- row accessors: SQLite's and PostgreSQL's are the stores' (sql_rows.h) ---- */

#ifdef BSO_HAVE_MARIADB
/* MySQL's text protocol: every value a string, NULL a null pointer. */
struct my_row {
    MYSQL_ROW row;
};

static const char *my_text(const void *ctx, int col)
{
    const char *v = ((const struct my_row *)ctx)->row[col];
    return v ? v : "";
}

static int64_t my_i64(const void *ctx, int col)
{
    return strtoll(my_text(ctx, col), NULL, 10);
}

static double my_f64(const void *ctx, int col)
{
    return strtod(my_text(ctx, col), NULL);
}

static bool my_null(const void *ctx, int col)
{
    return ((const struct my_row *)ctx)->row[col] == NULL;
}

/* Decodes %XX escapes of a URL part into out (cap bytes); false when it does not fit. */
static bool url_part(const char *from, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o + 1 >= cap)
            return false;
        if (from[i] == '%' && i + 2 < n) {
            const char hex[3] = {from[i + 1], from[i + 2], 0};
            out[o++] = (char)strtol(hex, NULL, 16);
            i += 2;
        } else {
            out[o++] = from[i];
        }
    }
    out[o] = '\0';
    return true;
}

/* mysql[+driver]://user[:password]@host[:port]/database, as SQLAlchemy reads it. */
static int open_mysql(struct bso_zeus_db *db, const char *rest, char *err, size_t errcap)
{
    char user[256] = "", pass[256] = "", host[256] = "", name[256] = "";
    unsigned port = 3306;
    const char *slash = strchr(rest, '/');
    const char *at = strrchr(rest, '@');
    if (!slash || (at && at > slash) || !slash[1]) {
        snprintf(err, errcap, "a MySQL URL names its database: mysql://user:pw@host:port/db");
        return BSO_EINVAL;
    }
    const char *hostpart = at ? at + 1 : rest;
    if (at) {
        const char *colon = memchr(rest, ':', (size_t)(at - rest));
        const size_t un = (size_t)((colon ? colon : at) - rest);
        if (!url_part(rest, un, user, sizeof user) ||
            (colon && !url_part(colon + 1, (size_t)(at - colon - 1), pass, sizeof pass))) {
            snprintf(err, errcap, "the MySQL user or password is too long");
            return BSO_EINVAL;
        }
    }
    const char *colon = memchr(hostpart, ':', (size_t)(slash - hostpart));
    const size_t hn = (size_t)((colon ? colon : slash) - hostpart);
    if (hn == 0 || hn >= sizeof host) {
        snprintf(err, errcap, "the MySQL URL has no host");
        return BSO_EINVAL;
    }
    memcpy(host, hostpart, hn);
    if (colon)
        port = (unsigned)strtoul(colon + 1, NULL, 10);
    const size_t nn = strcspn(slash + 1, "?");
    if (!url_part(slash + 1, nn, name, sizeof name)) {
        snprintf(err, errcap, "the MySQL database name is too long");
        return BSO_EINVAL;
    }
    db->my = mysql_init(NULL);
    if (!db->my ||
        !mysql_real_connect(db->my, host, user, pass[0] ? pass : NULL, name, port, NULL, 0)) {
        snprintf(err, errcap, "cannot connect to the Zeus database: %s",
                 db->my ? mysql_error(db->my) : "out of memory");
        return BSO_EIO;
    }
    /* The queries quote Zeus's table names as SQL does ("Job"); MySQL needs ANSI_QUOTES. */
    if (mysql_query(db->my, "SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')") != 0 ||
        mysql_query(db->my, "SET SESSION TRANSACTION READ ONLY") != 0) {
        snprintf(err, errcap, "cannot set up the MySQL session: %s", mysql_error(db->my));
        return BSO_EIO;
    }
    return 0;
}
#endif

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
    } else if ((rest = after_scheme(url, "mysql")) != NULL ||
               (rest = after_scheme(url, "mariadb")) != NULL) {
#ifdef BSO_HAVE_MARIADB
        const int rc = open_mysql(db, rest, err, errcap);
        if (rc < 0) {
            bso_zeus_db_close(db);
            return rc;
        }
#else
        snprintf(err, errcap,
                 "this bso-server was built without MySQL support (libmariadb-dev): copy "
                 "Zeus's four tables into SQLite first");
        free(db);
        return BSO_EINVAL;
#endif
    } else {
        snprintf(err, errcap,
                 "%s: not a database URL this import reads (sqlite:///PATH, postgresql://... or "
                 "mysql://...)",
                 url);
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
#ifdef BSO_HAVE_MARIADB
    if (db->my)
        mysql_close(db->my);
#endif
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
        const struct bso_row row = bso_sqlite_row(st);
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
#ifdef BSO_HAVE_MARIADB
    if (db->my) {
        MYSQL_RES *res;
        if (mysql_query(db->my, sql) != 0 || !(res = mysql_store_result(db->my))) {
            snprintf(db->errmsg, sizeof db->errmsg, "%s", mysql_error(db->my));
            return BSO_EIO;
        }
        struct my_row at;
        const struct bso_row row = {&at, my_text, my_i64, my_f64, my_null};
        while (cb == 0 && (at.row = mysql_fetch_row(res)) != NULL)
            cb = fn(ctx, &row);
        mysql_free_result(res);
        return cb;
    }
#endif
    PGresult *res = PQexec(db->pg, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        snprintf(db->errmsg, sizeof db->errmsg, "%s", PQerrorMessage(db->pg));
        PQclear(res);
        return BSO_EIO;
    }
    struct bso_pg_row at = {res, 0};
    const struct bso_row row = bso_pg_row(&at);
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
#ifdef BSO_HAVE_MARIADB
    else if (db->my)
        snprintf(sql, sizeof sql,
                 "SELECT column_name FROM information_schema.columns WHERE table_name = '%s'"
                 " AND table_schema = DATABASE()",
                 table);
#endif
    else
        snprintf(sql, sizeof sql,
                 "SELECT column_name FROM information_schema.columns WHERE table_name = '%s'"
                 " AND table_schema = current_schema()",
                 table);
    struct column_ctx c = {fn, ctx};
    return bso_zeus_db_query(db, sql, one_column, &c);
}
