/* bso-bench's HTTP/1.1 client; see http.h. */
#include "bench/http.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/time.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bso/error.h"

#define TIMEOUT_MS 30000

struct bso_http {
    char host[256], port[16];
    int fd;
    char *buf; /* the answer as read: head, then body */
    size_t len, cap;
    char *body; /* decoded body, NUL-terminated */
    size_t body_len, body_cap;
    char *req; /* the request being written */
    size_t req_cap;
    int status;
    char errmsg[256];
};

__attribute__((format(printf, 3, 4))) static int fail(struct bso_http *h, int code, const char *fmt,
                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->errmsg, sizeof h->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

int bso_http_new(const char *url, struct bso_http **out)
{
    if (strncmp(url, "http://", 7) != 0)
        return BSO_EINVAL;
    struct bso_http *h = calloc(1, sizeof *h);
    if (!h)
        return BSO_ENOMEM;
    h->fd = -1;
    const char *p = url + 7, *end = p + strcspn(p, "/");
    const char *colon = memchr(p, ':', (size_t)(end - p));
    const size_t host_len = (size_t)((colon ? colon : end) - p);
    if (host_len == 0 || host_len >= sizeof h->host ||
        (colon && (size_t)(end - colon - 1) >= sizeof h->port)) {
        free(h);
        return BSO_EINVAL;
    }
    memcpy(h->host, p, host_len);
    if (colon)
        memcpy(h->port, colon + 1, (size_t)(end - colon - 1));
    else
        strcpy(h->port, "80");
    *out = h;
    return 0;
}

void bso_http_free(struct bso_http *h)
{
    if (!h)
        return;
    if (h->fd >= 0)
        close(h->fd);
    free(h->buf);
    free(h->body);
    free(h->req);
    free(h);
}

static int grow(char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    char *q = realloc(*p, c);
    if (!q)
        return BSO_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

static int connect_to(struct bso_http *h)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(h->host, h->port, &hints, &ai);
    if (rc != 0)
        return fail(h, BSO_ENET, "%s: %s", h->host, gai_strerror(rc));
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return fail(h, BSO_ENET, "cannot connect to %s:%s: %s", h->host, h->port, strerror(errno));
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* A server that stops answering makes recv/send fail with EAGAIN, never hang the bench. */
    const struct timeval limit = {TIMEOUT_MS / 1000, (TIMEOUT_MS % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    h->fd = fd;
    return 0;
}

static void disconnect(struct bso_http *h)
{
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
}

/* Reads more of the answer into buf; 0, or BSO_ENET on close, error or timeout. */
static int read_more(struct bso_http *h)
{
    if (grow(&h->buf, &h->cap, h->len + 4096 + 1) < 0)
        return fail(h, BSO_ENOMEM, "out of memory");
    for (;;) {
        ssize_t n = recv(h->fd, h->buf + h->len, h->cap - h->len - 1, 0);
        if (n > 0) {
            h->len += (size_t)n;
            h->buf[h->len] = '\0';
            return 0;
        }
        if (n == 0)
            return fail(h, BSO_ENET, "the server closed the connection");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return fail(h, BSO_ENET, "no answer within %d s", TIMEOUT_MS / 1000);
        return fail(h, BSO_ENET, "recv: %s", strerror(errno));
    }
}

static int send_all(struct bso_http *h, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(h->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return fail(h, BSO_ENET, "send: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The value of header `name` in the head [head, end), or NULL. */
static const char *header(const char *head, const char *end, const char *name, size_t *len)
{
    const size_t nl = strlen(name);
    for (const char *line = strstr(head, "\r\n"); line && line < end;
         line = strstr(line + 2, "\r\n")) {
        const char *l = line + 2;
        if ((size_t)(end - l) > nl && strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
            const char *v = l + nl + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            *len = strcspn(v, "\r");
            return v;
        }
    }
    return NULL;
}

/* Decodes a chunked body starting at buf + at, reading more as needed. */
static int read_chunked(struct bso_http *h, size_t at)
{
    h->body_len = 0;
    for (;;) {
        char *eol;
        while (!(eol = strstr(h->buf + at, "\r\n")))
            if (read_more(h) < 0)
                return BSO_ENET;
        const size_t size = strtoul(h->buf + at, NULL, 16);
        at = (size_t)(eol - h->buf) + 2;
        while (h->len < at + size + 2)
            if (read_more(h) < 0)
                return BSO_ENET;
        if (size == 0)
            return 0; /* no trailers expected from these servers */
        if (grow(&h->body, &h->body_cap, h->body_len + size + 1) < 0)
            return fail(h, BSO_ENOMEM, "out of memory");
        memcpy(h->body + h->body_len, h->buf + at, size);
        h->body_len += size;
        h->body[h->body_len] = '\0';
        at += size + 2;
    }
}

static int exchange(struct bso_http *h, size_t req_len, bool *keep)
{
    if (h->fd < 0 && connect_to(h) < 0)
        return BSO_ENET;
    if (send_all(h, h->req, req_len) < 0)
        return BSO_ENET;
    h->len = 0;
    char *end;
    do {
        if (read_more(h) < 0)
            return BSO_ENET;
    } while (!(end = strstr(h->buf, "\r\n\r\n")));
    int status;
    if (sscanf(h->buf, "HTTP/1.%*d %d", &status) != 1)
        return fail(h, BSO_EPARSE, "not an HTTP answer");
    h->status = status;
    size_t vl;
    const char *v = header(h->buf, end, "Connection", &vl);
    *keep = !(v && vl == 5 && strncasecmp(v, "close", 5) == 0);
    const size_t at = (size_t)(end - h->buf) + 4;
    if ((v = header(h->buf, end, "Transfer-Encoding", &vl)) && vl >= 7 &&
        strncasecmp(v, "chunked", 7) == 0) {
        int rc = read_chunked(h, at);
        if (rc < 0)
            return rc;
    } else {
        v = header(h->buf, end, "Content-Length", &vl);
        if (!v)
            return fail(h, BSO_EPARSE, "an answer without Content-Length");
        const size_t n = strtoul(v, NULL, 10);
        while (h->len < at + n)
            if (read_more(h) < 0)
                return BSO_ENET;
        if (grow(&h->body, &h->body_cap, n + 1) < 0)
            return fail(h, BSO_ENOMEM, "out of memory");
        memcpy(h->body, h->buf + at, n);
        h->body[n] = '\0';
        h->body_len = n;
    }
    return status;
}

int bso_http_request(struct bso_http *h, const char *method, const char *path, const char *body,
                     size_t body_len)
{
    const size_t need = strlen(method) + strlen(path) + strlen(h->host) + body_len + 160;
    if (grow(&h->req, &h->req_cap, need) < 0)
        return fail(h, BSO_ENOMEM, "out of memory");
    int n =
        snprintf(h->req, h->req_cap, "%s %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Length: %zu\r\n\r\n",
                 method, path, h->host, h->port, body ? body_len : 0);
    if (body)
        memcpy(h->req + n, body, body_len);
    const size_t len = (size_t)n + (body ? body_len : 0);
    /* A kept-alive connection the server has since closed fails at once: retry once on a
     * fresh connection. A request on a fresh connection is never sent twice. */
    const bool fresh = h->fd < 0;
    bool keep = true;
    int rc = exchange(h, len, &keep);
    if (rc == BSO_ENET && !fresh && h->len == 0) {
        disconnect(h);
        rc = exchange(h, len, &keep);
    }
    if (rc < 0 || !keep)
        disconnect(h);
    return rc;
}

const char *bso_http_body(const struct bso_http *h, size_t *len)
{
    if (len)
        *len = h->body_len;
    return h->body ? h->body : "";
}

int bso_http_status(const struct bso_http *h)
{
    return h->status;
}

const char *bso_http_errmsg(const struct bso_http *h)
{
    return h->errmsg;
}
