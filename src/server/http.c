/* libmicrohttpd glue; see http.h. */
#include "server/http.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <microhttpd.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bso/error.h"
#include "server/auth.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/routes.h"

struct bso_server {
    struct MHD_Daemon *daemon;
    struct bso_store *store;
    struct bso_auth *auth;
    char *tls_cert, *tls_key; /* PEM text, alive as long as the daemon */
    struct bso_config cfg;
    int port;
};

#define BSO_REQUEST_ID_MAX 64

/* Per-connection state while a request body arrives. */
struct pending {
    char *body;
    size_t len, cap;
    bool too_large;
    bool answered;      /* a response was queued early (413) */
    bool too_many_args; /* the query string was dropped unparsed: answer 414 */
    bool bad_target;    /* %-escapes that decode to NUL or to bytes that are not UTF-8: 400 */
    bool started;       /* on_request has seen the headers */
    struct timespec start;
    char id[BSO_REQUEST_ID_MAX + 1]; /* X-Request-Id: the client's, or made here */
};

/* A request id the client chose is kept when it is 1 to 64 characters of [A-Za-z0-9._-];
 * otherwise one is made: 16 hex digits from a counter mixed with the process's start. */
static void request_id(struct MHD_Connection *c, char *out)
{
    const char *given = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
    size_t n = given ? strlen(given) : 0;
    bool ok = n > 0 && n <= BSO_REQUEST_ID_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = (given[i] >= 'a' && given[i] <= 'z') || (given[i] >= 'A' && given[i] <= 'Z') ||
             (given[i] >= '0' && given[i] <= '9') || given[i] == '.' || given[i] == '_' ||
             given[i] == '-';
    if (ok) {
        memcpy(out, given, n + 1);
        return;
    }
    static _Atomic uint64_t counter;
    static uint64_t salt;
    if (!salt) { /* racy but harmless: any value of it will do */
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        salt =
            ((uint64_t)t.tv_sec * 1000000007u) ^ (uint64_t)t.tv_nsec ^ ((uint64_t)getpid() << 40);
    }
    uint64_t x =
        salt + atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed) * 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull; /* splitmix64's finaliser */
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    snprintf(out, BSO_REQUEST_ID_MAX + 1, "%016llx", (unsigned long long)(x ^ (x >> 31)));
}

/* libmicrohttpd keeps every query parameter in the connection's small memory pool; a flood of
 * them leaves no room for an answer, and it then neither answers nor closes (0.9.75). No route
 * takes more than three, so a query string with more than this many is blanked here, before
 * libmicrohttpd splits it, and the request answered 414. */
#define BSO_MAX_QUERY_PARAMS 32

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Whether the request target, its %-escapes decoded as libmicrohttpd decodes them, is UTF-8
 * without NUL. Job ids come from the path and the query: a NUL ended one early (a%00b addressed
 * job a, DELETE included), and bytes that are not UTF-8 were refused by PostgreSQL (a 503 that
 * said to try again). A job id registered in JSON is always UTF-8 without NUL. */
static bool target_decodes_cleanly(const char *uri)
{
    unsigned need = 0;  /* continuation bytes still to come */
    unsigned lo = 0x80; /* the least the next continuation byte may be (overlongs, surrogates) */
    unsigned hi = 0xBF; /* and the most */
    for (const char *s = uri; *s; s++) {
        unsigned b = (unsigned char)*s;
        if (b == '%' && hex_digit(s[1]) >= 0 && hex_digit(s[2]) >= 0) {
            b = (unsigned)(hex_digit(s[1]) * 16 + hex_digit(s[2]));
            s += 2;
        }
        if (need > 0) {
            if (b < lo || b > hi)
                return false;
            need--;
            lo = 0x80;
            hi = 0xBF;
            continue;
        }
        if (b == 0 || (b >= 0x80 && b < 0xC2) || b > 0xF4)
            return false;
        if (b >= 0xC2 && b <= 0xDF) {
            need = 1;
        } else if (b >= 0xE0 && b <= 0xEF) {
            need = 2;
            lo = b == 0xE0 ? 0xA0 : 0x80;
            hi = b == 0xED ? 0x9F : 0xBF;
        } else if (b >= 0xF0) {
            need = 3;
            lo = b == 0xF0 ? 0x90 : 0x80;
            hi = b == 0xF4 ? 0x8F : 0xBF;
        }
    }
    return need == 0;
}

/* Called with the request line's target before anything of it is parsed: the request's state
 * starts here, an overlong query string is dropped, and a target that does not decode to UTF-8
 * is marked. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    struct pending *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    clock_gettime(CLOCK_MONOTONIC, &p->start);
    p->bad_target = !target_decodes_cleanly(uri);
    char *q = strchr(uri, '?');
    if (q) {
        size_t params = 1;
        for (const char *s = q + 1; *s; s++)
            params += *s == '&' || *s == ';';
        if (params > BSO_MAX_QUERY_PARAMS) {
            /* The target lies in the connection's read buffer, which libmicrohttpd itself
             * rewrites in place while parsing: ending it at the '?' leaves no parameters. */
            q[1] = '\0';
            p->too_many_args = true;
        }
    }
    return p;
}

static enum MHD_Result send_json_with(struct MHD_Connection *c, unsigned status, struct jbuf *body,
                                      bool challenge)
{
    size_t len;
    char *text = jb_take(body, &len);
    if (!text) { /* out of memory while writing: a short fixed answer */
        static const char oom[] = "{\"message\":\"The server is out of memory.\"}";
        text = strdup(oom);
        len = text ? strlen(text) : 0;
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, text ? text : (char *)"", MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (bso_log_request())
        MHD_add_response_header(r, "X-Request-Id", bso_log_request());
    if (challenge)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"bso\"");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, struct jbuf *body)
{
    return send_json_with(c, status, body, false);
}

static enum MHD_Result message(struct MHD_Connection *c, unsigned status, const char *msg)
{
    struct jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "message");
    jb_str(&b, msg);
    jb_end(&b);
    return send_json(c, status, &b);
}

/* A routed answer: JSON, or a raw body (metrics, dashboard files). */
static enum MHD_Result send_response(struct MHD_Connection *c, struct bso_response *res)
{
    if (!res->raw)
        return send_json_with(c, res->status, &res->body, res->bearer_challenge);
    jb_free(&res->body);
    struct MHD_Response *r = MHD_create_response_from_buffer(
        res->raw_len, res->raw, res->raw_owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (res->raw_owned)
            free(res->raw);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type);
    if (bso_log_request())
        MHD_add_response_header(r, "X-Request-Id", bso_log_request());
    enum MHD_Result ok = MHD_queue_response(c, res->status, r);
    MHD_destroy_response(r);
    return ok;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* The largest body over the limit that is still read (and dropped) so that its sender can read
 * the 413; see on_request. */
#define DRAIN_MAX (64ull << 20)

/* An answer given before routing (400, 408, 413, 414), counted as unrouted. */
static enum MHD_Result early_answer(struct MHD_Connection *c, struct pending *p, unsigned status,
                                    const char *msg)
{
    p->answered = true;
    bso_metrics_request(BSO_METRICS_UNROUTED, status, ms_since(&p->start) / 1e3);
    return message(c, status, msg);
}

static enum MHD_Result too_large(struct MHD_Connection *c, struct pending *p, size_t max)
{
    char msg[128];
    snprintf(msg, sizeof msg, "Request body too large: the limit is %zu bytes.", max);
    return early_answer(c, p, MHD_HTTP_CONTENT_TOO_LARGE, msg);
}

/* A request whose headers took longer than --request-timeout to arrive: 408, and the
 * connection closes (libmicrohttpd closes it after an answer given before the body was read). */
static enum MHD_Result request_timeout(struct MHD_Connection *c, struct pending *p)
{
    return early_answer(c, p, MHD_HTTP_REQUEST_TIMEOUT, "The request took too long to arrive.");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    struct bso_server *srv = cls;
    struct pending *p = *con_cls;
    if (!p)
        return MHD_NO; /* on_uri ran out of memory */
    if (!p->started)
        request_id(c, p->id);
    bso_log_set_request(p->id); /* this thread's answers and log lines carry it */
    if (!p->started) {
        p->started = true;
        if (p->too_many_args)
            return early_answer(c, p, MHD_HTTP_URI_TOO_LONG, "Too many query parameters.");
        if (p->bad_target)
            return early_answer(c, p, MHD_HTTP_BAD_REQUEST,
                                "The request target must be UTF-8 without NUL once its "
                                "%-escapes are decoded.");
        if (ms_since(&p->start) > 1e3 * srv->cfg.request_timeout_s)
            return request_timeout(c, p);
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const unsigned long long length = cl ? strtoull(cl, NULL, 10) : 0;
        /* Over the limit. Answering at once would close the connection under a client still
         * sending, which then sees a reset instead of the 413: a body of up to DRAIN_MAX is
         * read to its end and thrown away first (below); only a larger one is refused now. */
        if (length > DRAIN_MAX)
            return too_large(c, p, srv->cfg.max_body);
        if (length > srv->cfg.max_body)
            p->too_large = true;
        return MHD_YES;
    }
    if (*upload_size) {
        if (ms_since(&p->start) > 1e3 * srv->cfg.request_timeout_s) {
            /* libmicrohttpd cannot answer in the middle of a body: the connection closes. */
            log_info("%s %s: the body took longer than %d s to arrive; closing", method, url,
                     srv->cfg.request_timeout_s);
            return MHD_NO;
        }
        if (!p->answered && !p->too_large) {
            if (p->len + *upload_size > srv->cfg.max_body) {
                p->too_large = true;
            } else {
                if (p->len + *upload_size + 1 > p->cap) {
                    size_t cap = p->cap ? p->cap : 4096;
                    while (cap < p->len + *upload_size + 1)
                        cap *= 2;
                    char *g = realloc(p->body, cap);
                    if (!g)
                        return MHD_NO;
                    p->body = g;
                    p->cap = cap;
                }
                memcpy(p->body + p->len, upload, *upload_size);
                p->len += *upload_size;
                p->body[p->len] = '\0';
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (p->answered)
        return MHD_YES;
    if (p->too_large)
        return too_large(c, p, srv->cfg.max_body);
    p->answered = true;

    struct bso_request req = {
        .conn = c,
        .method = method,
        .path = url,
        .body = p->body ? p->body : "",
        .body_len = p->len,
        .store = srv->store,
        .cfg = &srv->cfg,
        .auth = srv->auth,
    };
    struct bso_response res = {.status = 200};
    jb_init(&res.body);
    bso_route(&req, &res);
    const double ms = ms_since(&p->start);
    bso_metrics_request(res.route, res.status, ms / 1e3);
    log_debug("%s %s -> %u (%.2f ms)", method, url, res.status, ms);
    enum MHD_Result ok = send_response(c, &res);
    bso_log_set_request(NULL);
    return ok;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)c;
    (void)why;
    struct pending *p = *con_cls;
    bso_log_set_request(NULL);
    if (p) {
        free(p->body);
        free(p);
        *con_cls = NULL;
    }
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_warn("http: %s", msg);
}

static void server_free(struct bso_server *srv)
{
    bso_auth_free(srv->auth);
    free(srv->tls_cert);
    if (srv->tls_key) {
        explicit_bzero(srv->tls_key, strlen(srv->tls_key));
        free(srv->tls_key);
    }
    free(srv);
}

/* The whole of a (small) file as a string, or NULL with err set. */
static char *read_pem(const char *path, const char *what, char *err, size_t errcap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errcap, "cannot read %s '%s': %s", what, path, strerror(errno));
        return NULL;
    }
    char *text = malloc(1 << 20);
    size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    const bool bad = !text || ferror(f) || n == 0 || !feof(f);
    fclose(f);
    if (bad) {
        free(text);
        snprintf(err, errcap, "%s '%s' is empty, unreadable or larger than 1 MiB", what, path);
        return NULL;
    }
    text[n] = '\0';
    char *fit = realloc(text, n + 1);
    if (fit)
        text = fit;
    if (!strstr(text, "-----BEGIN ")) {
        free(text);
        snprintf(err, errcap, "%s '%s' is not a PEM file", what, path);
        return NULL;
    }
    return text;
}

/* Whether addr is a loopback address (127.0.0.0/8, ::1, or IPv4 mapped into IPv6). */
static bool is_loopback(const struct sockaddr *addr)
{
    if (addr->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)addr)->sin_addr.s_addr) >> 24) == 127;
    if (addr->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)addr)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}

/* Sets up token checks; a server others can reach must have tokens (or be told otherwise). */
static int auth_start(struct bso_server *srv, enum bso_auth_mode mode, char *err, size_t errcap)
{
    if (mode == BSO_AUTH_OFF) {
        log_warn("--insecure-no-auth: every client may read and change every job");
        return 0;
    }
    srv->auth = bso_auth_new(srv->store, mode);
    if (!srv->auth) {
        snprintf(err, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    struct bso_session *s;
    int64_t active = 0;
    int rc = bso_store_session(srv->store, &s);
    if (rc == 0) {
        rc = bso_session_token_count(s, &active);
        if (rc < 0)
            snprintf(err, errcap, "cannot read API tokens: %s", bso_session_errmsg(s));
        bso_session_release(s);
    } else {
        snprintf(err, errcap, "cannot open a database session");
    }
    if (rc == 0 && active == 0 && mode == BSO_AUTH_REQUIRED) {
        snprintf(err, errcap,
                 "--host %s can be reached from other machines, and the database has no API "
                 "token: create one first (bso-server token create --tenant NAME), or serve "
                 "without authentication with --insecure-no-auth",
                 srv->cfg.host);
        rc = BSO_EINVAL;
    }
    if (rc == 0 && active == 0)
        log_warn("no API tokens yet: local clients are served without one until a token is "
                 "created (bso-server token create --tenant NAME)");
    if (rc < 0) {
        bso_auth_free(srv->auth);
        srv->auth = NULL;
    }
    return rc;
}

int bso_server_start(const struct bso_config *cfg, struct bso_store *store, struct bso_server **out,
                     char *err, size_t errcap)
{
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    char port[8];
    snprintf(port, sizeof port, "%d", cfg->port);
    int gai = getaddrinfo(cfg->host, port, &hints, &ai);
    if (gai != 0) {
        snprintf(err, errcap, "cannot resolve --host '%s': %s", cfg->host, gai_strerror(gai));
        return BSO_EINVAL;
    }
    struct bso_server *srv = calloc(1, sizeof(*srv));
    if (!srv) {
        freeaddrinfo(ai);
        snprintf(err, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    srv->store = store;
    srv->cfg = *cfg;
    const enum bso_auth_mode mode = cfg->insecure_no_auth      ? BSO_AUTH_OFF
                                    : is_loopback(ai->ai_addr) ? BSO_AUTH_LOOPBACK
                                                               : BSO_AUTH_REQUIRED;
    int rc = auth_start(srv, mode, err, errcap);
    if (rc == 0 && cfg->tls_cert[0]) {
        srv->tls_cert = read_pem(cfg->tls_cert, "--tls-cert", err, errcap);
        srv->tls_key = srv->tls_cert ? read_pem(cfg->tls_key, "--tls-key", err, errcap) : NULL;
        if (!srv->tls_key)
            rc = BSO_EINVAL;
    }
    if (rc < 0) {
        freeaddrinfo(ai);
        server_free(srv);
        return rc;
    }
    /* ITC lets MHD_stop_daemon wake the workers for a clean stop. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    /* Under group commit a request waits for its batch's fsync, and would hold up every other
     * connection of a shared thread: each connection gets a thread of its own then. */
    const bool per_connection = cfg->durability == BSO_DURABILITY_FULL;
    flags |= per_connection ? MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL
                            : MHD_USE_EPOLL | MHD_USE_TURBO;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (srv->tls_cert)
        flags |= MHD_USE_TLS;
    /* One thread: MHD's polling thread alone (it warns about a pool of one). */
    const bool pooled = !per_connection && cfg->threads > 1;
    struct MHD_OptionItem pool[] = {
        {pooled ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, cfg->threads, NULL},
        {MHD_OPTION_END, 0, NULL}};
    struct MHD_OptionItem tls[] = {{MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls_cert},
                                   {MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key},
                                   {MHD_OPTION_END, 0, NULL}};
    if (!srv->tls_cert)
        tls[0].option = MHD_OPTION_END;
    /* The logger must be the first option, or MHD logs its first messages its own way. An
     * 8 KiB pool per connection holds its headers: bodies are copied out as they arrive. */
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, NULL, MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_ARRAY, pool, MHD_OPTION_ARRAY,
        tls, MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_per_client,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(8 * 1024), MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!srv->daemon) {
        if (srv->tls_cert)
            snprintf(err, errcap,
                     "cannot listen on %s:%d (in use, not an address of this host, or a "
                     "certificate and key that do not load or do not match)",
                     cfg->host, cfg->port);
        else
            snprintf(err, errcap, "cannot listen on %s:%d (in use, or not an address of this host)",
                     cfg->host, cfg->port);
        server_free(srv);
        return BSO_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : cfg->port;
    *out = srv;
    return 0;
}

int bso_server_port(const struct bso_server *srv)
{
    return srv->port;
}

void bso_server_stop(struct bso_server *srv)
{
    if (!srv)
        return;
    /* MHD_stop_daemon stops accepting, lets each worker finish the handler it is running and
     * joins them. (MHD_quiesce_daemon first would be gentler to idle keep-alive connections,
     * but libmicrohttpd 0.9.75 can abort in it, "Failed to remove listen FD from epoll set",
     * when a worker is touching the listening socket at that moment: seen once in CI.) */
    MHD_stop_daemon(srv->daemon);
    server_free(srv);
}
