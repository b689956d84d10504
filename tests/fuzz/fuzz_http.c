/* libFuzzer target for the whole request path of bso-server, query strings included: a real
 * server (libmicrohttpd, routes, codecs, policy, a SQLite store in a temporary directory) runs
 * in this process, and each input becomes one HTTP request on a fresh loopback connection.
 * The first byte picks the endpoint; the rest, split at the first NUL, is the query string (or
 * path segment) and the body. Bytes that cannot appear in a request line are percent-encoded
 * so that the search reaches our parsing rather than stopping at libmicrohttpd's.
 * Every request must get an answer (no hang, no crash) whose status is below 500. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "server/config.h"
#include "server/http.h"
#include "server/log.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct bso_store *store;
static struct bso_server *server;
static int port;
static char dir[64];

static void teardown(void)
{
    bso_server_stop(server);
    bso_store_close(store);
    char path[128];
    const char *files[] = {"bso.db", "bso.db-wal", "bso.db-shm"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* Sends req (len bytes) and reads the answer to the end; its status, or -1 without one. */
static int exchange(const char *req, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        abort();
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* libFuzzer's timer signal interrupts calls: a connect then goes on in the background. */
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int soerr = errno;
        socklen_t sl = sizeof soerr;
        if (errno == EINTR) {
            while (poll(&p, 1, 10000) < 0 && errno == EINTR) {
            }
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        }
        if (soerr != 0) {
            fprintf(stderr, "fuzz_http: connect: %s\n", strerror(soerr));
            abort();
        }
    }
    for (size_t off = 0; off < len;) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the server may answer (and close) before reading everything */
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    char head[64] = "";
    size_t got = 0;
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0 || (n < 0 && errno == EINTR)) {
        if (n < 0)
            continue;
        if (got < sizeof head - 1) {
            size_t take = (size_t)n < sizeof head - 1 - got ? (size_t)n : sizeof head - 1 - got;
            memcpy(head + got, buf, take);
            got += take;
            head[got] = '\0';
        }
    }
    if (n < 0)
        abort(); /* no end of answer within 10 s: a hang */
    close(fd);
    int status;
    return sscanf(head, "HTTP/1.%*1d %3d", &status) == 1 ? status : -1;
}

static void start(void)
{
    snprintf(dir, sizeof dir, "/tmp/bso-fuzz-http.XXXXXX");
    if (!mkdtemp(dir))
        abort();
    char *argv[] = {"fuzz_http", "--host", "127.0.0.1", "--port", "0", "--threads", "2", NULL};
    struct bso_config cfg;
    char err[512];
    if (bso_config_load(&cfg, 7, argv, "/nonexistent/.env", err, sizeof err) != 0)
        abort();
    snprintf(cfg.database, sizeof cfg.database, "sqlite:///%s/bso.db", dir);
    bso_log_setup(BSO_LOG_ERROR, BSO_LOG_TEXT, 2);
    struct bso_store_options opt = {.cache_bytes = 1 << 20};
    if (bso_store_open(cfg.database, &opt, &store, err, sizeof err) != 0 ||
        bso_server_start(&cfg, store, &server, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_http: %s\n", err);
        abort();
    }
    port = bso_server_port(server);
    atexit(teardown);
    /* A job the inputs can name: "fuzz". */
    static const char spec[] =
        "{\"job_id\":\"fuzz\",\"job_id_prefix\":\"fuzz\",\"batch_sizes\":[8,16,32,64],\"default_"
        "batch_size\":16,"
        "\"eta_knob\":0.5,\"beta_knob\":2,\"target_metric\":0.5,\"higher_is_better_metric\":true,"
        "\"max_epochs\":5,\"num_pruning_rounds\":1,\"window_size\":4,\"max_power\":300,"
        "\"number_of_gpus\":1,\"gpu_model\":\"A100\",\"mab_prior_mean\":0,"
        "\"mab_prior_precision\":0,\"mab_num_explorations\":2,\"mab_seed\":1}";
    char req[2048];
    int len = snprintf(req, sizeof req,
                       "POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                       sizeof spec - 1, spec);
    const int status = exchange(req, (size_t)len);
    if (status != 201 && status != 200) {
        fprintf(stderr, "fuzz_http: registering the fuzz job got %d\n", status);
        abort();
    }
}

/* Appends s (n bytes) to out, percent-encoding what a request line cannot carry. */
static size_t encode(char *out, const uint8_t *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t c = s[i];
        if (c > 0x20 && c < 0x7f && c != '#') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct {
        const char *method, *path; /* the variable part follows the path */
    } routes[] = {
        {"POST", "/jobs"},    {"GET", "/jobs/batch_size?"},  {"POST", "/report"},
        {"PATCH", "/trials"}, {"DELETE", "/jobs?"},          {"GET", "/jobs?"},
        {"GET", "/jobs/"},    {"GET", "/jobs/fuzz/trials?"}, {"GET", "/"},
        {"POST", "/jobs/"},
    };
    if (!server)
        start();
    if (size == 0 || size > 64 * 1024)
        return 0;
    const size_t r = data[0] % (sizeof routes / sizeof *routes);
    const uint8_t *rest = data + 1;
    const size_t n = size - 1;
    const uint8_t *nul = memchr(rest, 0, n);
    const size_t qlen = nul ? (size_t)(nul - rest) : n;
    const uint8_t *body = nul ? nul + 1 : rest + n;
    const size_t blen = nul ? n - qlen - 1 : 0;
    char *req = malloc(3 * qlen + blen + 256);
    if (!req)
        return 0;
    size_t o = (size_t)sprintf(req, "%s %s", routes[r].method, routes[r].path);
    o += encode(req + o, rest, qlen);
    o += (size_t)sprintf(req + o,
                         " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                         blen);
    memcpy(req + o, body, blen);
    const int status = exchange(req, o + blen);
    free(req);
    if (status < 100 || status >= 500) {
        fprintf(stderr, "fuzz_http: %s %s... answered %d\n", routes[r].method, routes[r].path,
                status);
        abort();
    }
    return 0;
}
