/* GPU power limits that always go back; see power_limits.h. */
#include "client/power_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "bso/power.h"
#include "client/nvml.h"

/* A GPU whose limit this process changed, and what to put back. Read by the signal handler,
 * which takes no lock: `active` is written last when holding and first when releasing. */
struct held {
    volatile sig_atomic_t active;
    unsigned index;
    nvml_device dev;
    unsigned original_mw;
    char uuid[96];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvml nv;
static volatile sig_atomic_t nv_open;
static struct held held[BSO_MAX_GPUS];
static bool hooks_installed;
/* The process that holds the limits. A child forked from it (a data loader's worker) inherits
 * the table and the handlers, but its exit or death must not put the limits back under the
 * parent that is still training with them. */
static volatile pid_t owner;

static const int fatal_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT,
                                    SIGSEGV, SIGBUS, SIGFPE, SIGABRT};
#define N_FATAL (sizeof fatal_signals / sizeof *fatal_signals)

static const char *record_path(void)
{
    const char *p = getenv("BSO_POWER_RECORD");
    return p && *p ? p : "/var/tmp/bso-power-limits";
}

/* NVML for this process, opened on demand and kept while a GPU is held (lock held). */
static bool open_nvml(char *err, size_t cap)
{
    if (nv_open)
        return true;
    char why[256];
    if (!bso_nvml_open(&nv, why, sizeof why)) {
        snprintf(err, cap, "cannot set GPU power limits: %s", why);
        return false;
    }
    nv_open = 1;
    return true;
}

/* Restores every held GPU. Async-signal-tolerant: no lock, no allocation, no stdio. */
static int restore_held_unlocked(void)
{
    int restored = 0;
    for (size_t i = 0; i < BSO_MAX_GPUS; i++) {
        if (!held[i].active)
            continue;
        held[i].active = 0;
        if (nv.set_power_limit(held[i].dev, held[i].original_mw) == NVML_OK)
            restored++;
    }
    return restored;
}

/* Closes NVML when no GPU is held any more (lock held), so that a process that gave every
 * limit back leaves NVML as it found it. */
static void close_if_idle(void)
{
    for (size_t i = 0; i < BSO_MAX_GPUS; i++)
        if (held[i].active)
            return;
    if (nv_open) {
        nv_open = 0;
        bso_nvml_close(&nv);
    }
}

static void on_fatal_signal(int sig)
{
    if (nv_open && getpid() == owner)
        restore_held_unlocked();
    /* SA_RESETHAND put the default action back: the signal now does what it would have. */
    raise(sig);
}

/* A line of the record file: the GPU, its original limit and the process that changed it. */
struct record_line {
    char uuid[96];
    unsigned index;
    unsigned original_mw;
    long pid;
};

static bool parse_record(const char *line, struct record_line *r)
{
    return sscanf(line, "%95s %u %u %ld", r->uuid, &r->index, &r->original_mw, &r->pid) == 4;
}

/* Reads the whole record file (locked) into a buffer the caller frees; fd stays open and
 * locked for the rewrite. NULL when the file is absent or unreadable. */
static char *record_open(int *fd_out)
{
    int fd = open(record_path(), O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    flock(fd, LOCK_EX);
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ssize_t got;
    while (buf && (got = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)got;
        if (len + 1 < cap)
            continue;
        char *bigger = realloc(buf, cap *= 2);
        if (!bigger)
            free(buf);
        buf = bigger;
    }
    if (!buf) {
        close(fd);
        return NULL;
    }
    buf[len] = '\0';
    *fd_out = fd;
    return buf;
}

/* Writes `keep` over the record file and unlocks it. */
static void record_close(int fd, const char *keep)
{
    if (ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0) {
        size_t left = strlen(keep);
        while (left > 0) {
            ssize_t put = write(fd, keep, left);
            if (put <= 0)
                break;
            keep += put;
            left -= (size_t)put;
        }
    }
    flock(fd, LOCK_UN);
    close(fd);
}

static void record_add(const struct held *h)
{
    int fd = open(record_path(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return; /* no record: exit and signal restores still work; a SIGKILL's will not */
    flock(fd, LOCK_EX);
    dprintf(fd, "%s %u %u %ld\n", h->uuid, h->index, h->original_mw, (long)getpid());
    flock(fd, LOCK_UN);
    close(fd);
}

/* Drops this process's line for GPU index. */
static void record_drop(unsigned index)
{
    int fd;
    char *all = record_open(&fd);
    if (!all)
        return;
    char *keep = malloc(strlen(all) + 1);
    if (!keep) {
        flock(fd, LOCK_UN);
        close(fd);
        free(all);
        return;
    }
    keep[0] = '\0';
    char *save = NULL;
    for (char *line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct record_line r;
        if (parse_record(line, &r) && r.pid == (long)getpid() && r.index == index)
            continue;
        strcat(strcat(keep, line), "\n");
    }
    record_close(fd, keep);
    free(keep);
    free(all);
}

static void restore_at_exit(void)
{
    bso_power_restore();
}

/* The exit hook, and a handler for each fatal signal that still has its default action (a
 * handler someone installed, such as Python's for SIGINT, is left alone: its exception ends
 * in the exit path). Lock held. */
static void install_hooks(void)
{
    if (hooks_installed)
        return;
    hooks_installed = true;
    atexit(restore_at_exit);
    for (size_t k = 0; k < N_FATAL; k++) {
        struct sigaction old;
        if (sigaction(fatal_signals[k], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal_signals[k], &sa, NULL);
    }
}

static struct held *find_held(unsigned index)
{
    for (size_t i = 0; i < BSO_MAX_GPUS; i++)
        if (held[i].active && held[i].index == index)
            return &held[i];
    return NULL;
}

int bso_power_limit_range(unsigned index, unsigned *lo_mw, unsigned *hi_mw, char *err,
                          size_t errcap)
{
    pthread_mutex_lock(&lock);
    int rc = 0;
    nvml_device dev;
    int nrc;
    if (!open_nvml(err, errcap)) {
        rc = BSO_ENODEV;
    } else if ((nrc = nv.handle_by_index(index, &dev)) != NVML_OK ||
               (nrc = nv.limit_constraints(dev, lo_mw, hi_mw)) != NVML_OK) {
        snprintf(err, errcap, "GPU %u's power limit range: %s", index, bso_nvml_error(&nv, nrc));
        rc = BSO_EIO;
    }
    close_if_idle();
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Why a set call failed, as a code and a sentence. */
static int refusal(int nrc, unsigned index, unsigned mw, char *err, size_t errcap)
{
    const char *what = bso_nvml_error(&nv, nrc);
    if (nrc == NVML_NO_PERMISSION) {
        snprintf(err, errcap,
                 "setting GPU %u's power limit needs root or the CAP_SYS_ADMIN capability "
                 "(NVML: %s)",
                 index, what);
        return BSO_ENODEV;
    }
    if (nrc == NVML_NOT_SUPPORTED) {
        snprintf(err, errcap, "GPU %u cannot have its power limit set (NVML: %s)", index, what);
        return BSO_ENODEV;
    }
    snprintf(err, errcap, "GPU %u: power limit %u W: %s", index, mw / 1000, what);
    return nrc == NVML_INVALID_ARGUMENT ? BSO_EINVAL : BSO_EIO;
}

int bso_power_limit_set(unsigned index, unsigned mw, char *err, size_t errcap)
{
    pthread_mutex_lock(&lock);
    int rc = 0, nrc = NVML_OK;
    struct held *h = NULL;
    if (!open_nvml(err, errcap)) {
        rc = BSO_ENODEV;
    } else if (!nv.set_power_limit) {
        snprintf(err, errcap, "this NVML cannot set power limits");
        rc = BSO_ENODEV;
    } else if ((h = find_held(index)) == NULL) {
        /* The first change: remember and record the original before making it. */
        for (size_t i = 0; i < BSO_MAX_GPUS && !h; i++)
            if (!held[i].active)
                h = &held[i];
        unsigned original = 0;
        nvml_device dev = NULL;
        if (!h)
            rc = BSO_ERANGE;
        else if ((nrc = nv.handle_by_index(index, &dev)) != NVML_OK ||
                 (nrc = nv.power_limit(dev, &original)) != NVML_OK)
            rc = refusal(nrc, index, mw, err, errcap);
        if (rc == 0) {
            h->index = index;
            h->dev = dev;
            h->original_mw = original;
            if (nv.uuid(dev, h->uuid, sizeof h->uuid) != NVML_OK || !h->uuid[0])
                snprintf(h->uuid, sizeof h->uuid, "gpu-%u", index);
            owner = getpid();
            record_add(h);
            install_hooks();
            h->active = 1;
            if ((nrc = nv.set_power_limit(dev, mw)) != NVML_OK) {
                h->active = 0;
                record_drop(index);
                rc = refusal(nrc, index, mw, err, errcap);
            }
        }
    } else if ((nrc = nv.set_power_limit(h->dev, mw)) != NVML_OK) {
        rc = refusal(nrc, index, mw, err, errcap);
    }
    close_if_idle();
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Puts h back and forgets it (lock held). */
static int restore_one(struct held *h)
{
    h->active = 0;
    if (getpid() != owner)
        return 0; /* a forked child's copy: the parent still uses the limit */
    const int nrc = nv.set_power_limit(h->dev, h->original_mw);
    record_drop(h->index);
    return nrc == NVML_OK ? 0 : BSO_EIO;
}

int bso_power_limit_restore(unsigned index)
{
    pthread_mutex_lock(&lock);
    struct held *h = find_held(index);
    const int rc = h ? restore_one(h) : 0;
    close_if_idle();
    pthread_mutex_unlock(&lock);
    return rc;
}

int bso_power_restore(void)
{
    if (getpid() != owner)
        return 0; /* a forked child holds nothing */
    pthread_mutex_lock(&lock);
    int restored = 0;
    for (size_t i = 0; i < BSO_MAX_GPUS; i++)
        if (held[i].active && restore_one(&held[i]) == 0)
            restored++;
    close_if_idle();
    pthread_mutex_unlock(&lock);
    return restored;
}

static bool process_alive(long pid)
{
    return pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* The NVML device whose UUID is uuid (or "gpu-N" for a GPU without one). */
static int device_by_uuid(const char *uuid, nvml_device *dev)
{
    unsigned count = 0;
    if (nv.count(&count) != NVML_OK)
        return -1;
    for (unsigned i = 0; i < count; i++) {
        char u[96];
        nvml_device d;
        if (nv.handle_by_index(i, &d) != NVML_OK)
            continue;
        if (nv.uuid(d, u, sizeof u) != NVML_OK || !u[0])
            snprintf(u, sizeof u, "gpu-%u", i);
        if (strcmp(u, uuid) == 0) {
            *dev = d;
            return (int)i;
        }
    }
    return -1;
}

int bso_power_restore_recorded(void (*say)(void *ctx, const char *line), void *ctx)
{
    char line_out[512];
    pthread_mutex_lock(&lock);
    if (!open_nvml(line_out, sizeof line_out)) {
        pthread_mutex_unlock(&lock);
        say(ctx, line_out);
        return BSO_ENODEV;
    }
    int fd;
    char *all = record_open(&fd);
    if (!all) {
        close_if_idle();
        pthread_mutex_unlock(&lock);
        return 0;
    }
    /* Newest first: a process that started after another was killed recorded that one's
     * leftover as its original, so the oldest record is the true original and goes last. */
    const size_t total = strlen(all);
    size_t n = 0, cap = 1;
    for (const char *c = all; *c; c++)
        cap += *c == '\n';
    char **lines = malloc(cap * sizeof *lines);
    char *save = NULL;
    for (char *l = strtok_r(all, "\n", &save); lines && l; l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    bool *keep = calloc(cap, sizeof *keep);
    char *rest = malloc(total + 2);
    int restored = 0, rc = 0;
    for (size_t k = n; lines && keep && k-- > 0;) {
        struct record_line r;
        nvml_device dev;
        if (!parse_record(lines[k], &r))
            continue; /* a damaged line: dropped */
        if (process_alive(r.pid)) {
            snprintf(line_out, sizeof line_out,
                     "%s: held by process %ld, which is still running: left alone", r.uuid, r.pid);
            say(ctx, line_out);
            keep[k] = true;
            continue;
        }
        const int index = device_by_uuid(r.uuid, &dev);
        if (index < 0) {
            snprintf(line_out, sizeof line_out, "%s: no such GPU on this machine: record dropped",
                     r.uuid);
            say(ctx, line_out);
            continue;
        }
        const int nrc = nv.set_power_limit ? nv.set_power_limit(dev, r.original_mw) : -1;
        if (nrc != NVML_OK) {
            char why[300];
            rc = nrc < 0 ? BSO_ENODEV
                         : refusal(nrc, (unsigned)index, r.original_mw, why, sizeof why);
            snprintf(line_out, sizeof line_out, "GPU %d (%s): not restored: %s", index, r.uuid,
                     nrc < 0 ? "this NVML cannot set power limits" : why);
            say(ctx, line_out);
            keep[k] = true;
            continue;
        }
        snprintf(line_out, sizeof line_out,
                 "GPU %d (%s): power limit back to %u W (changed by process %ld)", index, r.uuid,
                 r.original_mw / 1000, r.pid);
        say(ctx, line_out);
        restored++;
    }
    if (lines && keep && rest) {
        rest[0] = '\0';
        for (size_t k = 0; k < n; k++)
            if (keep[k])
                strcat(strcat(rest, lines[k]), "\n");
        record_close(fd, rest);
    } else {
        flock(fd, LOCK_UN);
        close(fd);
        rc = BSO_ENOMEM;
    }
    free(rest);
    free(keep);
    free(lines);
    free(all);
    close_if_idle();
    pthread_mutex_unlock(&lock);
    return rc < 0 ? rc : restored;
}
