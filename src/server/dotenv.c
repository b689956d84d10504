/* .env reader; see dotenv.h. */
#include "server/dotenv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"

void bso_dotenv_free(struct bso_dotenv *env)
{
    if (!env)
        return;
    for (size_t i = 0; i < env->n; i++) {
        free(env->key[i]);
        free(env->value[i]);
    }
    env->n = 0;
}

const char *bso_dotenv_get(const struct bso_dotenv *env, const char *key)
{
    for (size_t i = env->n; i-- > 0;)
        if (strcmp(env->key[i], key) == 0)
            return env->value[i];
    return NULL;
}

static int bad(char *err, size_t cap, const char *name, int line, const char *why)
{
    snprintf(err, cap, "%s:%d: %s", name, line, why);
    return BSO_EPARSE;
}

/* Parses the value starting at p (end of line at e) into out (same size as the line). */
static int parse_value(const char *p, const char *e, char *out, const char **why)
{
    size_t o = 0;
    if (*p == '"' || *p == '\'') {
        const char q = *p++;
        for (; p < e && *p != q; p++) {
            if (q == '"' && *p == '\\' && p + 1 < e) {
                p++;
                out[o++] = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
            } else {
                out[o++] = *p;
            }
        }
        if (p >= e) {
            *why = "unterminated quote";
            return -1;
        }
        for (p++; p < e && isspace((unsigned char)*p); p++)
            ;
        if (p < e && *p != '#') {
            *why = "unexpected text after the closing quote";
            return -1;
        }
    } else {
        const char *end = e;
        for (const char *h = p; h < e; h++)
            if (*h == '#' && (h == p || isspace((unsigned char)h[-1]))) {
                end = h;
                break;
            }
        while (end > p && isspace((unsigned char)end[-1]))
            end--;
        memcpy(out, p, (size_t)(end - p));
        o = (size_t)(end - p);
    }
    out[o] = '\0';
    return 0;
}

int bso_dotenv_parse(const char *text, const char *name, struct bso_dotenv *env, char *err,
                     size_t errcap)
{
    memset(env, 0, sizeof(*env));
    int line = 0;
    for (const char *p = text; *p;) {
        line++;
        const char *e = strchr(p, '\n');
        if (!e)
            e = p + strlen(p);
        const char *next = *e ? e + 1 : e;
        while (p < e && isspace((unsigned char)*p))
            p++;
        if (p == e || *p == '#') {
            p = next;
            continue;
        }
        if ((size_t)(e - p) > 7 && strncmp(p, "export", 6) == 0 && isspace((unsigned char)p[6]))
            for (p += 7; p < e && isspace((unsigned char)*p); p++)
                ;
        const char *k = p;
        while (p < e && (isalnum((unsigned char)*p) || *p == '_' || *p == '.'))
            p++;
        const char *kend = p;
        while (p < e && (*p == ' ' || *p == '\t'))
            p++;
        if (kend == k || p == e || *p != '=') {
            bso_dotenv_free(env);
            return bad(err, errcap, name, line, "expected KEY=VALUE");
        }
        for (p++; p < e && (*p == ' ' || *p == '\t'); p++)
            ;
        if (env->n >= BSO_DOTENV_MAX) {
            bso_dotenv_free(env);
            return bad(err, errcap, name, line, "too many entries");
        }
        char *key = strndup(k, (size_t)(kend - k));
        char *value = malloc((size_t)(e - p) + 1);
        const char *why = "out of memory";
        if (!key || !value || parse_value(p, e, value, &why) < 0) {
            free(key);
            free(value);
            bso_dotenv_free(env);
            return bad(err, errcap, name, line, why);
        }
        env->key[env->n] = key;
        env->value[env->n++] = value;
        p = next;
    }
    return 0;
}

int bso_dotenv_load(const char *path, struct bso_dotenv *env, char *err, size_t errcap)
{
    memset(env, 0, sizeof(*env));
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errcap, "%s: %s", path, strerror(errno));
        return BSO_EIO;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + got + 1 > cap) {
            cap = (len + got + 1) * 2;
            char *g = realloc(text, cap);
            if (!g || cap > (1u << 20)) {
                free(g ? g : text);
                fclose(f);
                snprintf(err, errcap, "%s: too large", path);
                return BSO_ERANGE;
            }
            text = g;
        }
        memcpy(text + len, chunk, got);
        len += got;
    }
    fclose(f);
    if (!text)
        return 0;
    text[len] = '\0';
    int rc = bso_dotenv_parse(text, path, env, err, errcap);
    free(text);
    return rc;
}
