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
    struct bso_http_answer ans;
    char *req; /* the request being written */
    size_t req_cap;
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

int bso_http_split_url(const char *url, char *host, size_t host_cap, char *port, size_t port_cap)
{
    if (strncmp(url, "http://", 7) != 0)
        return BSO_EINVAL;
    const char *p = url + 7, *end = p + strcspn(p, "/");
    const char *colon = memchr(p, ':', (size_t)(end - p));
    const size_t host_len = (size_t)((colon ? colon : end) - p);
    const size_t port_len = colon ? (size_t)(end - colon - 1) : 2;
    if (host_len == 0 || host_len >= host_cap || port_len == 0 || port_len >= port_cap)
        return BSO_EINVAL;
    memcpy(host, p, host_len);
    host[host_len] = '\0';
    memcpy(port, colon ? colon + 1 : "80", port_len);
    port[port_len] = '\0';
    return 0;
}

int bso_http_new(const char *url, struct bso_http **out)
{
    struct bso_http *h = calloc(1, sizeof *h);
    if (!h)
        return BSO_ENOMEM;
    h->fd = -1;
    if (bso_http_split_url(url, h->host, sizeof h->host, h->port, sizeof h->port) < 0) {
        free(h);
        return BSO_EINVAL;
    }
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
    free(h->ans.body);
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

int bso_http_dial(const char *host, const char *port, char *err, size_t errcap)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errcap, "%s: %s", host, gai_strerror(rc));
        return BSO_ENET;
    }
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(err, errcap, "cannot connect to %s:%s: %s", host, port, strerror(errno));
        return BSO_ENET;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int connect_to(struct bso_http *h)
{
    const int fd = bso_http_dial(h->host, h->port, h->errmsg, sizeof h->errmsg);
    if (fd < 0)
        return fd;
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
    for (const char *l = head; l < end;) {
        const char *eol = memmem(l, (size_t)(end - l), "\r\n", 2);
        if (!eol)
            eol = end;
        if ((size_t)(eol - l) > nl && strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
            const char *v = l + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            *len = (size_t)(eol - v);
            return v;
        }
        l = eol + 2;
    }
    return NULL;
}

static int append_body(struct bso_http_answer *a, const char *p, size_t n)
{
    if (grow(&a->body, &a->body_cap, a->body_len + n + 1) < 0)
        return BSO_ENOMEM;
    memcpy(a->body + a->body_len, p, n);
    a->body_len += n;
    a->body[a->body_len] = '\0';
    return 0;
}

/* A number in base 10 or 16 from [p, end); false when there is none. */
static bool number(const char *p, const char *end, int base, size_t *out)
{
    size_t v = 0;
    const char *q = p;
    for (; q < end; q++) {
        const int c = (unsigned char)*q;
        int d = c >= '0' && c <= '9'                 ? c - '0'
                : base == 16 && c >= 'a' && c <= 'f' ? c - 'a' + 10
                : base == 16 && c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                     : -1;
        if (d < 0)
            break;
        if (v > ((size_t)-1 - (size_t)d) / (size_t)base)
            return false;
        v = v * (size_t)base + (size_t)d;
    }
    *out = v;
    return q > p;
}

int bso_http_parse(const char *buf, size_t len, struct bso_http_answer *a)
{
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (!end)
        return len > 65536 ? BSO_EPARSE : 0;
    size_t status;
    if (end - buf < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' ||
        !number(buf + 9, buf + 12, 10, &status))
        return BSO_EPARSE;
    a->status = (int)status;
    size_t vl;
    const char *v = header(buf, end, "Connection", &vl);
    a->keep = !(v && vl == 5 && strncasecmp(v, "close", 5) == 0);
    a->body_len = 0;
    if (append_body(a, "", 0) < 0)
        return BSO_ENOMEM;
    size_t at = (size_t)(end - buf) + 4;
    if ((v = header(buf, end, "Transfer-Encoding", &vl)) && vl >= 7 &&
        strncasecmp(v, "chunked", 7) == 0) {
        for (;;) {
            const char *eol = memmem(buf + at, len - at, "\r\n", 2);
            if (!eol)
                return 0;
            size_t size;
            if (!number(buf + at, eol, 16, &size) || size > len)
                return BSO_EPARSE;
            at = (size_t)(eol - buf) + 2;
            if (len < at + size + 2)
                return 0;
            if (size == 0) { /* no trailers from these servers */
                a->consumed = at + 2;
                return 1;
            }
            if (append_body(a, buf + at, size) < 0)
                return BSO_ENOMEM;
            at += size + 2;
        }
    }
    size_t n;
    if (!(v = header(buf, end, "Content-Length", &vl)) || !number(v, v + vl, 10, &n))
        return BSO_EPARSE;
    if (len - at < n)
        return 0;
    if (append_body(a, buf + at, n) < 0)
        return BSO_ENOMEM;
    a->consumed = at + n;
    return 1;
}

int bso_http_format(char *buf, size_t cap, const char *host, const char *port, const char *method,
                    const char *path, const char *body, size_t body_len)
{
    const int n = snprintf(buf, cap, "%s %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Length: %zu\r\n\r\n",
                           method, path, host, port, body ? body_len : 0);
    if (n < 0 || (size_t)n + (body ? body_len : 0) >= cap)
        return BSO_ERANGE;
    if (body)
        memcpy(buf + n, body, body_len);
    return n + (int)(body ? body_len : 0);
}

static int exchange(struct bso_http *h, size_t req_len, bool *keep)
{
    if (h->fd < 0 && connect_to(h) < 0)
        return BSO_ENET;
    if (send_all(h, h->req, req_len) < 0)
        return BSO_ENET;
    h->len = 0;
    for (;;) {
        const int rc = bso_http_parse(h->buf ? h->buf : "", h->len, &h->ans);
        if (rc == BSO_ENOMEM)
            return fail(h, rc, "out of memory");
        if (rc < 0)
            return fail(h, rc, "not an HTTP answer");
        if (rc == 1)
            break;
        if (read_more(h) < 0)
            return BSO_ENET;
    }
    *keep = h->ans.keep;
    return h->ans.status;
}

int bso_http_request(struct bso_http *h, const char *method, const char *path, const char *body,
                     size_t body_len)
{
    const size_t need = strlen(method) + strlen(path) + strlen(h->host) + body_len + 160;
    if (grow(&h->req, &h->req_cap, need) < 0)
        return fail(h, BSO_ENOMEM, "out of memory");
    const int len =
        bso_http_format(h->req, h->req_cap, h->host, h->port, method, path, body, body_len);
    if (len < 0)
        return fail(h, len, "request too long");
    /* A kept-alive connection the server has since closed fails at once: retry once on a
     * fresh connection. A request on a fresh connection is never sent twice. */
    const bool fresh = h->fd < 0;
    bool keep = true;
    int rc = exchange(h, (size_t)len, &keep);
    if (rc == BSO_ENET && !fresh && h->len == 0) {
        disconnect(h);
        rc = exchange(h, (size_t)len, &keep);
    }
    if (rc < 0 || !keep)
        disconnect(h);
    return rc;
}

const char *bso_http_body(const struct bso_http *h, size_t *len)
{
    if (len)
        *len = h->ans.body_len;
    return h->ans.body ? h->ans.body : "";
}

int bso_http_status(const struct bso_http *h)
{
    return h->ans.status;
}

const char *bso_http_errmsg(const struct bso_http *h)
{
    return h->errmsg;
}
