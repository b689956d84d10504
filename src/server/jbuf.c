/* JSON writer; see jbuf.h. */
#include "server/jbuf.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pyfmt.h"

void jb_init(struct jbuf *b)
{
    memset(b, 0, sizeof(*b));
    b->first[0] = true;
}

void jb_free(struct jbuf *b)
{
    if (!b)
        return;
    free(b->buf);
    jb_init(b);
}

char *jb_take(struct jbuf *b, size_t *len)
{
    char *text = b->failed ? NULL : b->buf;
    if (b->failed)
        free(b->buf);
    else if (!text) /* nothing written: an empty string */
        text = calloc(1, 1);
    if (len)
        *len = text ? b->len : 0;
    b->buf = NULL;
    jb_init(b);
    return text;
}

bool jb_failed(const struct jbuf *b)
{
    return b->failed;
}

static void put(struct jbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *g = realloc(b->buf, cap);
        if (!g) {
            b->failed = true;
            return;
        }
        b->buf = g;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

/* Writes the comma that separates this value from the previous one, if any. */
static void before_value(struct jbuf *b)
{
    if (b->after_key) {
        b->after_key = false;
        return;
    }
    if (!b->first[b->depth])
        put(b, ",", 1);
    b->first[b->depth] = false;
}

static void open_with(struct jbuf *b, char opener, char closer)
{
    before_value(b);
    if (b->depth + 1 >= JB_MAX_DEPTH) {
        b->failed = true;
        return;
    }
    put(b, &opener, 1);
    b->first[++b->depth] = true;
    b->closer[b->depth] = closer;
}

void jb_obj(struct jbuf *b)
{
    open_with(b, '{', '}');
}

void jb_arr(struct jbuf *b)
{
    open_with(b, '[', ']');
}

void jb_end(struct jbuf *b)
{
    if (b->depth == 0) {
        b->failed = true;
        return;
    }
    put(b, &b->closer[b->depth--], 1);
}

void jb_key(struct jbuf *b, const char *key)
{
    jb_str(b, key);
    put(b, ":", 1);
    b->after_key = true;
}

void jb_str(struct jbuf *b, const char *s)
{
    before_value(b);
    put(b, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c != '"' && c != '\\' && c >= 0x20)
            continue;
        put(b, run, (size_t)(s - run));
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else if (c == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else if (c == '\t')
            snprintf(esc, sizeof esc, "\\t");
        else if (c == '\r')
            snprintf(esc, sizeof esc, "\\r");
        else
            snprintf(esc, sizeof esc, "\\u%04x", c);
        put(b, esc, strlen(esc));
        run = s + 1;
    }
    put(b, run, (size_t)(s - run));
    put(b, "\"", 1);
}

void jb_int(struct jbuf *b, int64_t v)
{
    char num[24];
    before_value(b);
    int n = snprintf(num, sizeof num, "%" PRId64, v);
    put(b, num, (size_t)n);
}

void jb_float(struct jbuf *b, double v)
{
    if (!isfinite(v)) {
        jb_null(b);
        return;
    }
    char num[BSO_PYFLOAT_MAX];
    before_value(b);
    int n = bso_pyfloat_repr(v, num, sizeof num);
    put(b, num, (size_t)n);
}

void jb_bool(struct jbuf *b, bool v)
{
    before_value(b);
    put(b, v ? "true" : "false", v ? 4 : 5);
}

void jb_null(struct jbuf *b)
{
    before_value(b);
    put(b, "null", 4);
}
