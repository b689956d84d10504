/*
 * The current row of a SQLite statement or of a PostgreSQL result as a struct bso_row
 * (columns.h): how the readers of BSO's own databases (sqlite.c, postgres.c) and of Zeus's
 * (zeus_db.c) see a row, written once per library.
 */
#ifndef BSO_STORE_SQL_ROWS_H
#define BSO_STORE_SQL_ROWS_H

#include <libpq-fe.h>
#include <sqlite3.h>

#include "store/columns.h"

/* st's current row (sqlite.c); valid until the statement steps or resets. */
struct bso_row bso_sqlite_row(sqlite3_stmt *st);

/* Row `row` of a PostgreSQL result (postgres.c); *at must outlive the struct bso_row. */
struct bso_pg_row {
    const PGresult *res;
    int row;
};
struct bso_row bso_pg_row(const struct bso_pg_row *at);

#endif
