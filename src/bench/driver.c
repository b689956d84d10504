/* bso-bench's clients on epoll; see driver.h. */
#include "bench/driver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/api.h"
#include "bench/cmdline.h"
#include "bench/http.h"
#include "bso/error.h"
#include "core/report.h"

#define TIMEOUT_S 30.0 /* as the messages say */

/* The request a client has in flight. */
enum step { STEP_NONE, STEP_REGISTER, STEP_PREDICT, STEP_REPORT, STEP_END };

static const enum bso_bench_endpoint endpoint_of[] = {
    [STEP_REGISTER] = BSO_EP_REGISTER,
    [STEP_PREDICT] = BSO_EP_PREDICT,
    [STEP_REPORT] = BSO_EP_REPORT,
    [STEP_END] = BSO_EP_END,
};

struct client {
    struct bso_drive_loop *lp;
    int fd;     /* -1: not connected */
    int index;  /* 0..clients-1 */
    int target; /* the server it talks to (an index into the loop's servers) */
    size_t k;   /* the job it drives now */
    enum step step;
    bool registering; /* the request in flight is one of the registrations before the clock */
    bool in_run;      /* between a batch size and the end of its trial */
    bool done;
    bool used;       /* its connection has carried a whole exchange */
    bool resent;     /* the request in flight went out a second time */
    bool want_write; /* EPOLLOUT is on */
    bool deferred;   /* failed without I/O: handled from the loop, not from inside a handler */
    bool parked;     /* no job left to register: waits for the clock */
    bool said_stop;  /* the last report's answer */
    double retry_at; /* when deferred */
    int64_t bs, number, epoch;
    long slot;
    struct bso_bench_run run;
    double t0;
    char out[4608];
    size_t out_len, out_off;
    char *in;
    size_t in_len, in_cap;
};

struct bso_drive_loop {
    struct bso_drive *d;
    struct bso_drive_tally *tally;
    pthread_t thread;
    int ep;
    struct client *clients;
    int n, active;
    /* Clients whose request failed before any I/O, handled in the next round (two lists: the
     * round's handlers add to the other). */
    struct client **deferred, **deferred_next;
    int n_deferred, n_parked;
    struct server {
        char host[256], port[16];
    } * servers;
    int n_servers;
    char errmsg[256]; /* the last transport failure */
    struct bso_http_answer ans;
};

static void start_unit(struct client *c);
static void defer(struct client *c);
static void answered(struct client *c, int rc);

/* ---- recording ---- */

static void record(struct client *c, int rc)
{
    struct bso_drive_loop *lp = c->lp;
    struct bso_drive_tally *t = lp->tally;
    const enum bso_bench_endpoint ep = endpoint_of[c->step];
    const double ms = (bso_bench_now() - c->t0) * 1e3;
    if (!c->registering && atomic_load(&lp->d->stop))
        return;
    if (rc < 0) {
        if (t->errors[ep]++ == 0 && !t->first_error[0]) {
            const char *body = lp->ans.body ? lp->ans.body : "";
            static const char *const names[] = {"register", "predict", "report", "end_trial"};
            if (rc == BSO_EHTTP)
                snprintf(t->first_error, sizeof t->first_error, "%s: HTTP %d: %.200s", names[ep],
                         lp->ans.status, body);
            else if (rc == BSO_EPARSE)
                snprintf(t->first_error, sizeof t->first_error,
                         "%s: an answer that is not what the API says: %.200s", names[ep], body);
            else
                snprintf(t->first_error, sizeof t->first_error, "%s: %.200s", names[ep],
                         lp->errmsg);
        }
        return;
    }
    if (bso_latency_add(&t->lat[ep], ms) < 0)
        t->failed = true;
}

/* ---- connections ---- */

static void disconnect(struct client *c)
{
    if (c->fd >= 0)
        close(c->fd); /* also leaves the epoll set */
    c->fd = -1;
    c->in_len = 0;
    c->used = c->want_write = false;
}

static int dial(struct client *c)
{
    struct bso_drive_loop *lp = c->lp;
    const struct server *sv = &lp->servers[c->target];
    const int fd = bso_http_dial(sv->host, sv->port, lp->errmsg, sizeof lp->errmsg);
    if (fd < 0) {
        c->target = (c->target + 1) % lp->n_servers; /* the next replica, next time */
        return fd;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
        epoll_ctl(lp->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        snprintf(lp->errmsg, sizeof lp->errmsg, "epoll: %s", strerror(errno));
        close(fd);
        return BSO_ENET;
    }
    c->fd = fd;
    return 0;
}

static void want_write(struct client *c, bool on)
{
    if (c->want_write == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0u), .data.ptr = c};
    epoll_ctl(c->lp->ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_write = on;
}

/* A transport failure: the connection is dropped, the request fails, and the client tries the
 * next replica. */
static void io_failed(struct client *c, const char *why)
{
    snprintf(c->lp->errmsg, sizeof c->lp->errmsg, "%s", why);
    disconnect(c);
    c->target = (c->target + 1) % c->lp->n_servers;
    answered(c, BSO_ENET);
}

static void flush(struct client *c)
{
    while (c->out_off < c->out_len) {
        const ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            want_write(c, true);
            return;
        } else {
            io_failed(c, strerror(errno));
            return;
        }
    }
    want_write(c, false);
}

/* A client whose connection failed tries again after a pause, as a real client would, and
 * not from inside a handler (a server that is down would make them call one another). */
static void defer(struct client *c)
{
    c->deferred = true;
    c->retry_at = bso_bench_now() + 0.01;
    c->lp->deferred_next[c->lp->n_deferred++] = c;
}

/* Sends the request in c->out on the client's connection, connecting first if need be. A
 * failure to connect is handled from the loop, so that a server that is down cannot make
 * the handlers call one another without end. */
static void transmit(struct client *c)
{
    c->out_off = 0;
    c->in_len = 0;
    if (c->fd < 0 && dial(c) < 0) {
        defer(c);
        return;
    }
    flush(c);
}

static void send_request(struct client *c, enum step step, const char *method, const char *path,
                         const char *body, int body_len)
{
    struct bso_drive_loop *lp = c->lp;
    c->step = step;
    c->resent = false;
    c->t0 = bso_bench_now();
    const int n = body_len < 0 ? body_len
                               : bso_http_format(c->out, sizeof c->out, lp->servers[c->target].host,
                                                 lp->servers[c->target].port, method, path, body,
                                                 (size_t)body_len);
    if (n < 0) { /* a job id too long for the buffers: a failed request */
        snprintf(lp->errmsg, sizeof lp->errmsg, "request too long");
        defer(c);
        return;
    }
    c->out_len = (size_t)n;
    transmit(c);
}

/* ---- the workload ---- */

static void send_register(struct client *c, size_t k)
{
    char spec[4096];
    const int n = bso_bench_job_spec(&c->lp->d->jobs[k], c->lp->d->policy, spec, sizeof spec) < 0
                      ? BSO_ERANGE
                      : (int)strlen(spec);
    send_request(c, STEP_REGISTER, "POST", "/jobs", spec, n);
}

static void send_predict(struct client *c)
{
    char path[320];
    const int n = bso_api_predict_path(path, sizeof path, c->lp->d->jobs[c->k].id);
    send_request(c, STEP_PREDICT, "GET", path, NULL, n < 0 ? n : 0);
}

static void send_report(struct client *c)
{
    const struct bso_report rep = bso_bench_report(&c->run, c->epoch);
    char body[512];
    const int n = bso_api_report_body(body, sizeof body, c->lp->d->jobs[c->k].id, c->bs, c->number,
                                      rep.time, rep.energy, rep.metric, c->epoch);
    send_request(c, STEP_REPORT, "POST", "/report", body, n);
}

static void send_end(struct client *c)
{
    char body[384];
    const int n =
        bso_api_end_trial_body(body, sizeof body, c->lp->d->jobs[c->k].id, c->bs, c->number);
    send_request(c, STEP_END, "PATCH", "/trials", body, n);
}

/* Client i takes jobs i, i + C, i + 2C...; with fewer jobs than clients, clients share. */
static void next_job(struct client *c)
{
    const struct bso_drive *d = c->lp->d;
    c->k += (size_t)d->clients;
    if (c->k >= d->n_jobs)
        c->k = (size_t)c->index % d->n_jobs;
}

/* The client's next unit of work: a registration while they last, then (once the clock
 * runs) a recurrence or a single request, until the run is over. */
static void start_unit(struct client *c)
{
    struct bso_drive *d = c->lp->d;
    c->step = STEP_NONE;
    c->registering = false;
    if (!atomic_load(&d->timed)) {
        const size_t k = atomic_fetch_add(&d->next_register, 1);
        if (k < d->n_jobs) {
            c->registering = true;
            send_register(c, k);
            return; /* its answer starts the next unit */
        }
        /* Only a client with nothing in flight waits for the clock: one parked with its
         * registration in flight could be started twice (once by its answer, once by the
         * clock) and send two requests on one connection. */
        if (!c->parked) {
            c->parked = true;
            c->lp->n_parked++;
        }
        return;
    }
    if (atomic_load(&d->stop) || c->lp->tally->failed) {
        c->done = true;
        c->lp->active--;
        disconnect(c);
        return;
    }
    if (d->mode == BSO_MODE_REGISTER)
        send_register(c, c->k);
    else
        send_predict(c);
}

/* The request in flight is over: rc is 0, or why it failed. */
static void answered(struct client *c, int rc)
{
    struct bso_drive *d = c->lp->d;
    record(c, rc);
    switch (c->step) {
    case STEP_REGISTER:
        if (c->registering)
            atomic_fetch_add(&d->registered, 1);
        else
            next_job(c);
        start_unit(c);
        return;
    case STEP_PREDICT:
        if (rc < 0) {
            bso_ledger_predict_failed(&d->ledgers[c->k]);
        } else if ((c->slot = bso_ledger_add(&d->ledgers[c->k], c->number, c->bs)) < 0) {
            c->lp->tally->failed = true;
        } else if (d->mode == BSO_MODE_MIXED) {
            c->in_run = true;
            c->run = bso_bench_run(&d->jobs[c->k], c->bs, c->number);
            c->epoch = 1;
            send_report(c);
            return;
        }
        next_job(c);
        start_unit(c);
        return;
    case STEP_REPORT: {
        bool stop = true; /* as a training script would on an error: end the trial */
        if (rc == 0) {
            stop = c->said_stop;
            bso_ledger_report(&d->ledgers[c->k], c->slot, bso_bench_report(&c->run, c->epoch).time,
                              stop);
        }
        if (stop || c->epoch >= d->jobs[c->k].max_epochs) {
            send_end(c);
        } else {
            c->epoch++;
            send_report(c);
        }
        return;
    }
    case STEP_END:
        c->in_run = false;
        next_job(c);
        start_unit(c);
        return;
    case STEP_NONE:
        return;
    }
}

/* Reads what the server sent; hands over a complete answer. */
static void readable(struct client *c)
{
    struct bso_drive_loop *lp = c->lp;
    bool eof = false;
    for (;;) {
        if (c->in_cap - c->in_len < 4096) {
            const size_t cap = c->in_cap ? c->in_cap * 2 : 8192;
            char *g = realloc(c->in, cap);
            if (!g) {
                lp->tally->failed = true;
                io_failed(c, "out of memory");
                return;
            }
            c->in = g;
            c->in_cap = cap;
        }
        const ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n > 0) {
            c->in_len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0) {
            io_failed(c, strerror(errno));
            return;
        }
        eof = true; /* the answer before it, if whole, still counts */
        break;
    }
    if (c->step == STEP_NONE) { /* nothing was asked: the server has nothing to say */
        io_failed(c, eof ? "the server closed the connection" : "an answer to no request");
        return;
    }
    const int parsed = bso_http_parse(c->in, c->in_len, &lp->ans);
    if (parsed == 0 && eof && c->in_len == 0 && c->used && !c->resent) {
        /* A kept-alive connection the server had closed: once more on a fresh one. If the
         * server died instead, it may have made a trial before: verify must allow for one. */
        if (c->step == STEP_PREDICT)
            bso_ledger_predict_failed(&lp->d->ledgers[c->k]);
        disconnect(c);
        c->resent = true;
        transmit(c);
        return;
    }
    if (parsed == 0 && eof) {
        io_failed(c, "the server closed the connection");
        return;
    }
    if (parsed == 0)
        return;
    if (parsed < 0) {
        io_failed(c, parsed == BSO_ENOMEM ? "out of memory" : "not an HTTP answer");
        return;
    }
    c->in_len = 0;
    c->used = true;
    if (!lp->ans.keep || eof)
        disconnect(c);
    int rc = lp->ans.status >= 200 && lp->ans.status < 300 ? 0 : BSO_EHTTP;
    if (rc == 0 && c->step == STEP_PREDICT)
        rc = bso_api_read_predict(lp->ans.body, &c->bs, &c->number);
    else if (rc == 0 && c->step == STEP_REPORT)
        rc = bso_api_read_report(lp->ans.body, &c->said_stop);
    answered(c, rc);
}

static void check_timeouts(struct bso_drive_loop *lp, double now)
{
    for (int i = 0; i < lp->n; i++) {
        struct client *c = &lp->clients[i];
        if (!c->done && c->fd >= 0 && c->step != STEP_NONE && now - c->t0 > TIMEOUT_S)
            io_failed(c, "no answer within 30 s");
    }
}

static void *run_loop(void *arg)
{
    struct bso_drive_loop *lp = arg;
    for (int i = 0; i < lp->n; i++)
        start_unit(&lp->clients[i]);
    struct epoll_event evs[64];
    double last_check = bso_bench_now();
    while (lp->active > 0) {
        /* Failures that happened before any I/O, once their pause is over. */
        struct client **round = lp->deferred_next;
        const int n_round = lp->n_deferred;
        lp->deferred_next = lp->deferred;
        lp->deferred = round;
        lp->n_deferred = 0;
        const double now = bso_bench_now();
        for (int i = 0; i < n_round; i++) {
            if (round[i]->retry_at > now) {
                lp->deferred_next[lp->n_deferred++] = round[i];
                continue;
            }
            round[i]->deferred = false;
            answered(round[i], BSO_ENET);
        }
        const int n = epoll_wait(lp->ep, evs, 64, lp->n_parked ? 1 : lp->n_deferred ? 10 : 100);
        for (int i = 0; i < n; i++) {
            struct client *c = evs[i].data.ptr;
            if (c->fd < 0)
                continue; /* closed by an earlier event of this round */
            if ((evs[i].events & EPOLLOUT) && c->out_off < c->out_len)
                flush(c);
            if (c->fd >= 0 && (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
                readable(c);
        }
        /* Parked clients (no job left to register) start once the clock runs. */
        if (lp->n_parked && atomic_load(&lp->d->timed))
            for (int i = 0; i < lp->n; i++) {
                struct client *c = &lp->clients[i];
                if (c->parked) {
                    c->parked = false;
                    lp->n_parked--;
                    start_unit(c);
                }
            }
        const double later = bso_bench_now();
        if (later - last_check > 0.1) {
            check_timeouts(lp, later);
            last_check = later;
        }
    }
    return NULL;
}

static void free_loop(struct bso_drive_loop *lp)
{
    for (int i = 0; lp->clients && i < lp->n; i++) {
        disconnect(&lp->clients[i]);
        free(lp->clients[i].in);
    }
    free(lp->clients);
    free(lp->deferred);
    free(lp->deferred_next);
    free(lp->servers);
    free(lp->ans.body);
    if (lp->ep >= 0)
        close(lp->ep);
}

int bso_drive_start(struct bso_drive *d, struct bso_drive_tally *tallies, char *err, size_t cap)
{
    d->loops = calloc((size_t)d->threads, sizeof *d->loops);
    if (!d->loops) {
        snprintf(err, cap, "out of memory");
        return BSO_ENOMEM;
    }
    for (int t = 0; t < d->threads; t++)
        d->loops[t].ep = -1;
    int started = 0, rc = 0;
    for (int t = 0; t < d->threads && rc == 0; t++) {
        struct bso_drive_loop *lp = &d->loops[t];
        lp->d = d;
        lp->tally = &tallies[t];
        /* Clients t, t + T, t + 2T... */
        lp->n = (d->clients - t + d->threads - 1) / d->threads;
        lp->active = lp->n;
        lp->ep = epoll_create1(EPOLL_CLOEXEC);
        lp->clients = calloc((size_t)lp->n, sizeof *lp->clients);
        lp->deferred = calloc((size_t)lp->n, sizeof *lp->deferred);
        lp->deferred_next = calloc((size_t)lp->n, sizeof *lp->deferred_next);
        lp->servers = calloc((size_t)d->n_urls, sizeof *lp->servers);
        lp->n_servers = d->n_urls;
        bool urls_ok = lp->servers != NULL;
        for (int u = 0; urls_ok && u < d->n_urls; u++)
            urls_ok =
                bso_http_split_url(d->urls[u], lp->servers[u].host, sizeof lp->servers[u].host,
                                   lp->servers[u].port, sizeof lp->servers[u].port) == 0;
        if (lp->ep < 0 || !lp->clients || !lp->deferred || !lp->deferred_next || !urls_ok) {
            snprintf(err, cap, "cannot set up client thread %d", t);
            rc = BSO_ENOMEM;
            break;
        }
        for (int i = 0; i < lp->n; i++) {
            struct client *c = &lp->clients[i];
            c->lp = lp;
            c->fd = -1;
            c->index = t + i * d->threads;
            c->target = c->index % d->n_urls;
            c->k = (size_t)c->index % d->n_jobs;
        }
        if (pthread_create(&lp->thread, NULL, run_loop, lp) != 0) {
            snprintf(err, cap, "cannot start client thread %d", t);
            rc = BSO_ENOMEM;
            break;
        }
        started++;
    }
    if (rc < 0) {
        atomic_store(&d->timed, true);
        atomic_store(&d->stop, true);
        atomic_store(&d->next_register, d->n_jobs);
        for (int t = 0; t < started; t++)
            pthread_join(d->loops[t].thread, NULL);
        for (int t = 0; t < d->threads; t++)
            free_loop(&d->loops[t]);
        free(d->loops);
        d->loops = NULL;
    }
    return rc;
}

void bso_drive_join(struct bso_drive *d)
{
    if (!d->loops)
        return;
    for (int t = 0; t < d->threads; t++)
        pthread_join(d->loops[t].thread, NULL);
    for (int t = 0; t < d->threads; t++)
        free_loop(&d->loops[t]);
    free(d->loops);
    d->loops = NULL;
}
