/*
 * A .env file reader: KEY=VALUE lines, optional "export ", '#' comments, single- or double-quoted
 * values (double quotes understand \n, \t, \" and \\). No variable expansion.
 */
#ifndef BSO_SERVER_DOTENV_H
#define BSO_SERVER_DOTENV_H

#include <stddef.h>

#define BSO_DOTENV_MAX 64

struct bso_dotenv {
    size_t n;
    char *key[BSO_DOTENV_MAX];
    char *value[BSO_DOTENV_MAX];
};

/* Reads path into *env (zeroed first). A missing file is not an error (empty result). On a
 * malformed line returns BSO_EPARSE with "path:line: reason" in err. Release with
 * bso_dotenv_free. */
int bso_dotenv_load(const char *path, struct bso_dotenv *env, char *err, size_t errcap);
/* Parses text the same way (for tests and for callers that already hold the file). */
int bso_dotenv_parse(const char *text, const char *name, struct bso_dotenv *env, char *err,
                     size_t errcap);
/* The last value given for key, or NULL. */
const char *bso_dotenv_get(const struct bso_dotenv *env, const char *key);
void bso_dotenv_free(struct bso_dotenv *env);

#endif
