/*
 * A lean HTTP/1.1 client for bso-bench: one keep-alive connection, requests written in one
 * send, answers read with Content-Length or chunked bodies. A load generator must cost little
 * next to the server it measures (it shares the machine), so no general-purpose library here.
 */
#ifndef BSO_BENCH_HTTP_H
#define BSO_BENCH_HTTP_H

#include <stdbool.h>
#include <stddef.h>

struct bso_http;

/* ---- the pieces, for clients that do their own I/O (bench/driver.c) ---- */

/* Splits "http://host[:port][/...]" into host and port (default 80). 0, or BSO_EINVAL. */
int bso_http_split_url(const char *url, char *host, size_t host_cap, char *port, size_t port_cap);

/* A TCP connection to host:port with Nagle off; the descriptor, or BSO_ENET with the reason in
 * err. */
int bso_http_dial(const char *host, const char *port, char *err, size_t errcap);

/* Writes a request (body may be NULL) into buf; its length, or BSO_ERANGE when cap is short. */
int bso_http_format(char *buf, size_t cap, const char *host, const char *port, const char *method,
                    const char *path, const char *body, size_t body_len);

/* An answer read off a connection. */
struct bso_http_answer {
    int status;
    bool keep;       /* false: the server closes the connection after it */
    size_t consumed; /* the bytes of the input it took */
    char *body;      /* decoded (Content-Length or chunked), NUL-terminated; owned, reused */
    size_t body_len, body_cap;
};

/* Parses the answer at the start of buf[0..len): 1 when it is complete, 0 when more must be
 * read, BSO_EPARSE when it is not HTTP, BSO_ENOMEM. */
int bso_http_parse(const char *buf, size_t len, struct bso_http_answer *a);

/* ---- a blocking client ---- */

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
