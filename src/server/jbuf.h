/*
 * A growable JSON writer that prints numbers the way Python's json module does (shortest
 * round-trip floats with a ".0" on integral values), compact like FastAPI's responses:
 *   jb_obj(b); jb_key(b, "stop_train"); jb_bool(b, true); jb_end(b);  ->  {"stop_train":true}
 * Commas are placed automatically. Allocation failure is sticky: jb_failed() tells.
 */
#ifndef BSO_SERVER_JBUF_H
#define BSO_SERVER_JBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JB_MAX_DEPTH 16

struct jbuf {
    char *buf;
    size_t len, cap;
    bool failed;
    int depth;
    bool first[JB_MAX_DEPTH];  /* nothing written yet at this depth */
    char closer[JB_MAX_DEPTH]; /* '}' or ']' for each open level */
    bool after_key;
};

void jb_init(struct jbuf *b);
/* Frees the text. NULL is a no-op. */
void jb_free(struct jbuf *b);
/* Takes the NUL-terminated text (caller frees), or NULL on failure; b is empty afterwards. */
char *jb_take(struct jbuf *b, size_t *len);
bool jb_failed(const struct jbuf *b);

void jb_obj(struct jbuf *b);
void jb_arr(struct jbuf *b);
void jb_end(struct jbuf *b); /* closes the innermost object or array */
void jb_key(struct jbuf *b, const char *key);
void jb_str(struct jbuf *b, const char *s);
void jb_int(struct jbuf *b, int64_t v);
/* Finite numbers as Python prints them; non-finite ones as null (JSON has no infinity). */
void jb_float(struct jbuf *b, double v);
void jb_bool(struct jbuf *b, bool v);
void jb_null(struct jbuf *b);

#endif
