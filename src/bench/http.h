/*
 * A lean HTTP/1.1 client for bso-bench: one keep-alive connection, requests written in one
 * send, answers read with Content-Length or chunked bodies. A load generator must cost little
 * next to the server it measures (it shares the machine), so no general-purpose library here.
 */
#ifndef BSO_BENCH_HTTP_H
#define BSO_BENCH_HTTP_H

#include <stddef.h>

struct bso_http;

/* A client for url ("http://host:port", no TLS). Reconnects on its own when the server closes
 * the connection. 0, BSO_EINVAL for a URL it cannot use, or BSO_ENOMEM. */
int bso_http_new(const char *url, struct bso_http **out);
void bso_http_free(struct bso_http *h);

/* Sends one request (body may be NULL) and reads the answer: its status, or a negative
 * BSO_E* code (BSO_ENET: no connection or no complete answer within the timeout). */
int bso_http_request(struct bso_http *h, const char *method, const char *path, const char *body,
                     size_t body_len);

/* The last answer's body (NUL-terminated) and its length; valid until the next request. */
const char *bso_http_body(const struct bso_http *h, size_t *len);

/* The last answer's status (0 before any). */
int bso_http_status(const struct bso_http *h);

/* Why the last request failed. */
const char *bso_http_errmsg(const struct bso_http *h);

#endif
