/* The energy monitor; see include/bso/monitor.h. */
#include "bso/monitor.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/nvml.h"
#include "client/rapl.h"
#include "os/os.h"

#define MAX_WINDOWS 32

struct gpu {
    struct bso_gpu_info info;
    nvml_device dev;
    /* nvml-counter: the last raw reading and what earlier counter resets added */
    double counter_last_j;
    double counter_offset_j;
    /* nvml-power: the integral up to the last sample, and that sample */
    double integral_j;
    double last_power_w;
    double last_t;
    /* Utilisation samples: their sum (percent) and count; utilization_ok once one answered */
    double util_sum;
    double util_n;
    bool utilization_ok;
};

struct window {
    char name[BSO_WINDOW_NAME_MAX];
    double t0;
    double gpu_j[BSO_MAX_GPUS];
    double cpu_j;
    double util_sum[BSO_MAX_GPUS], util_n[BSO_MAX_GPUS];
};

struct bso_monitor {
    struct nvml nvml;
    bool have_nvml;
    size_t n_gpus;
    struct gpu gpus[BSO_MAX_GPUS];
    struct rapl rapl;
    bool have_rapl;
    double assumed_w;
    int sample_ms;
    pthread_mutex_t lock; /* guards readings and windows */
    pthread_t sampler;
    bool sampler_running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stop;
    struct window windows[MAX_WINDOWS];
    size_t n_windows;
    char errmsg[256];
};

const char *bso_energy_source_name(enum bso_energy_source s)
{
    static const char *const names[] = {"none", "nvml-counter", "nvml-power", "rapl", "estimate"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "none";
}

void bso_monitor_options_init(struct bso_monitor_options *opt)
{
    memset(opt, 0, sizeof(*opt));
    opt->cpu = true;
    opt->sample_ms = 50;
}

__attribute__((format(printf, 3, 4))) static int fail(bso_monitor *m, int code, const char *fmt,
                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->errmsg, sizeof m->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

const char *bso_monitor_errmsg(const bso_monitor *m)
{
    return m->errmsg;
}

/* The GPUs to watch: explicit indices, else CUDA_VISIBLE_DEVICES (indices or UUIDs), else all.
 * Writes NVML indices into idx. */
static int choose_gpus(bso_monitor *m, const struct bso_monitor_options *opt, unsigned count,
                       int *idx, size_t *n)
{
    *n = 0;
    if (opt->gpus) {
        for (size_t i = 0; i < opt->n_gpus && *n < BSO_MAX_GPUS; i++) {
            if (opt->gpus[i] < 0 || (unsigned)opt->gpus[i] >= count)
                return fail(m, BSO_EINVAL, "GPU %d does not exist (this machine has %u)",
                            opt->gpus[i], count);
            idx[(*n)++] = opt->gpus[i];
        }
        return 0;
    }
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (!cvd) {
        for (unsigned i = 0; i < count && *n < BSO_MAX_GPUS; i++)
            idx[(*n)++] = (int)i;
        return 0;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", cvd);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok && *n < BSO_MAX_GPUS;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        char *end;
        long v = strtol(tok, &end, 10);
        if (end != tok && *end == '\0') {
            if (v < 0)
                break; /* CUDA stops at the first invalid entry: -1 hides every GPU */
            if ((unsigned long)v >= count)
                return fail(m, BSO_EINVAL, "CUDA_VISIBLE_DEVICES names GPU %ld; there are %u", v,
                            count);
            idx[(*n)++] = (int)v;
            continue;
        }
        /* A UUID (or its unique prefix). */
        int found = -1;
        for (unsigned i = 0; i < count; i++) {
            nvml_device d;
            char uuid[96];
            if (m->nvml.handle_by_index(i, &d) == NVML_OK &&
                m->nvml.uuid(d, uuid, sizeof uuid) == NVML_OK &&
                strncmp(uuid, tok, strlen(tok)) == 0)
                found = (int)i;
        }
        if (found < 0)
            return fail(m, BSO_EINVAL, "CUDA_VISIBLE_DEVICES names an unknown GPU '%s'", tok);
        idx[(*n)++] = found;
    }
    return 0;
}

static int setup_gpu(bso_monitor *m, struct gpu *g, int index)
{
    struct nvml *n = &m->nvml;
    g->info.index = index;
    int rc = n->handle_by_index((unsigned)index, &g->dev);
    if (rc != NVML_OK)
        return fail(m, BSO_EIO, "GPU %d: %s", index, bso_nvml_error(n, rc));
    if (n->name(g->dev, g->info.name, sizeof g->info.name) != NVML_OK)
        snprintf(g->info.name, sizeof g->info.name, "unknown");
    if (n->uuid(g->dev, g->info.uuid, sizeof g->info.uuid) != NVML_OK)
        g->info.uuid[0] = '\0';
    unsigned lo, hi, limit;
    if (n->limit_constraints(g->dev, &lo, &hi) == NVML_OK)
        g->info.max_power_limit_w = (double)(hi / 1000); /* whole watts, as Zeus floors them */
    if (n->power_limit(g->dev, &limit) == NVML_OK)
        g->info.power_limit_w = limit / 1000.0;
    unsigned long long mj;
    unsigned mw;
    if (n->total_energy(g->dev, &mj) == NVML_OK) {
        g->info.source = BSO_SOURCE_NVML_COUNTER;
        g->counter_last_j = (double)mj / 1000.0;
    } else if (n->power_usage(g->dev, &mw) == NVML_OK) {
        g->info.source = BSO_SOURCE_NVML_POWER;
        g->last_power_w = mw / 1000.0;
        g->last_t = bso_os_monotonic_s();
    } else {
        g->info.source = BSO_SOURCE_NONE;
    }
    unsigned util[2];
    g->utilization_ok = n->utilization && n->utilization(g->dev, util) == NVML_OK;
    return 0;
}

/* Adds one utilisation reading of g. Called with the lock held. */
static void sample_utilization(bso_monitor *m, struct gpu *g)
{
    unsigned util[2]; /* nvmlUtilization_t: gpu, memory */
    if (g->utilization_ok && m->nvml.utilization(g->dev, util) == NVML_OK) {
        g->util_sum += util[0];
        g->util_n += 1;
    }
}

/* Energy so far of one GPU, in joules since the monitor started. Called with the lock held. */
static int gpu_energy(bso_monitor *m, struct gpu *g, double t, double *j)
{
    if (g->info.source == BSO_SOURCE_NVML_COUNTER) {
        unsigned long long mj;
        int rc = m->nvml.total_energy(g->dev, &mj);
        if (rc != NVML_OK)
            return fail(m, BSO_EIO, "GPU %d energy counter: %s", g->info.index,
                        bso_nvml_error(&m->nvml, rc));
        double raw = (double)mj / 1000.0;
        if (raw < g->counter_last_j) /* the driver reset the counter: keep counting from 0 */
            g->counter_offset_j += g->counter_last_j;
        g->counter_last_j = raw;
        *j = g->counter_offset_j + raw;
        return 0;
    }
    if (g->info.source == BSO_SOURCE_NVML_POWER) {
        /* Up to the last sample, then the last power held until now. */
        *j = g->integral_j + g->last_power_w * (t - g->last_t);
        return 0;
    }
    *j = 0;
    return 0;
}

/* One sample: power-integrated GPUs add a trapezoid; energy counters and RAPL are read so that
 * a counter reset or wrap costs at most one period. Failures are left for end() to report. */
static void sample(bso_monitor *m)
{
    pthread_mutex_lock(&m->lock);
    const double t = bso_os_monotonic_s();
    for (size_t i = 0; i < m->n_gpus; i++) {
        struct gpu *g = &m->gpus[i];
        unsigned mw;
        double unused_j;
        sample_utilization(m, g);
        if (g->info.source == BSO_SOURCE_NVML_COUNTER) {
            gpu_energy(m, g, t, &unused_j);
            continue;
        }
        if (g->info.source != BSO_SOURCE_NVML_POWER || m->nvml.power_usage(g->dev, &mw) != NVML_OK)
            continue;
        const double p = mw / 1000.0;
        g->integral_j += (g->last_power_w + p) / 2.0 * (t - g->last_t);
        g->last_power_w = p;
        g->last_t = t;
    }
    double unused;
    if (m->have_rapl)
        bso_rapl_read(&m->rapl, &unused);
    pthread_mutex_unlock(&m->lock);
}

static void *sampler_main(void *arg)
{
    bso_monitor *m = arg;
    pthread_mutex_lock(&m->stop_lock);
    while (!m->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        long ns = until.tv_nsec + (long)m->sample_ms * 1000000L;
        until.tv_sec += ns / 1000000000L;
        until.tv_nsec = ns % 1000000000L;
        int rc = pthread_cond_timedwait(&m->stop_cond, &m->stop_lock, &until);
        if (m->stop)
            break;
        if (rc == ETIMEDOUT) {
            pthread_mutex_unlock(&m->stop_lock);
            sample(m);
            pthread_mutex_lock(&m->stop_lock);
        }
    }
    pthread_mutex_unlock(&m->stop_lock);
    return NULL;
}

int bso_monitor_new(const struct bso_monitor_options *opt_in, bso_monitor **out, char *errmsg,
                    size_t errcap)
{
    struct bso_monitor_options opt;
    if (opt_in)
        opt = *opt_in;
    else
        bso_monitor_options_init(&opt);
    *out = NULL;
    bso_monitor *m = calloc(1, sizeof(*m));
    if (!m) {
        if (errmsg && errcap)
            snprintf(errmsg, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->stop_lock, NULL);
    pthread_cond_init(&m->stop_cond, NULL);
    m->sample_ms = opt.sample_ms > 0 ? opt.sample_ms : 50;
    m->assumed_w = opt.assumed_power_w;
    const char *env_w = getenv("BSO_ASSUMED_POWER_W");
    if (m->assumed_w <= 0 && env_w && *env_w) {
        char *end;
        double w = strtod(env_w, &end);
        if (*end != '\0' || !(w > 0 && w < 1e7)) {
            int rc = fail(m, BSO_EINVAL, "BSO_ASSUMED_POWER_W='%s' is not a power in watts", env_w);
            if (errmsg && errcap)
                snprintf(errmsg, errcap, "%s", m->errmsg);
            bso_monitor_free(m);
            return rc;
        }
        m->assumed_w = w;
    }

    char why[256] = "";
    int rc = 0;
    m->have_nvml = bso_nvml_open(&m->nvml, why, sizeof why);
    if (m->have_nvml) {
        unsigned count = 0;
        int idx[BSO_MAX_GPUS];
        size_t n = 0;
        if (m->nvml.count(&count) != NVML_OK)
            count = 0;
        rc = choose_gpus(m, &opt, count, idx, &n);
        for (size_t i = 0; rc == 0 && i < n; i++)
            rc = setup_gpu(m, &m->gpus[i], idx[i]);
        if (rc == 0)
            m->n_gpus = n;
    }
    char rapl_why[256] = "";
    if (rc == 0 && opt.cpu)
        m->have_rapl = bso_rapl_open(&m->rapl, rapl_why, sizeof rapl_why);
    if (rc == 0 && bso_monitor_source(m) == BSO_SOURCE_NONE)
        rc = fail(m, BSO_ENODEV,
                  "nothing can be measured here (%s; %s): set BSO_ASSUMED_POWER_W to the power "
                  "draw in watts for a labelled estimate",
                  m->have_nvml ? "no measurable GPU" : why,
                  opt.cpu ? rapl_why : "CPU measurement off");
    bool needs_sampler = m->have_rapl;
    for (size_t i = 0; i < m->n_gpus; i++)
        needs_sampler |= m->gpus[i].info.source != BSO_SOURCE_NONE || m->gpus[i].utilization_ok;
    if (rc == 0 && needs_sampler) {
        if (pthread_create(&m->sampler, NULL, sampler_main, m) != 0)
            rc = fail(m, BSO_ENOMEM, "cannot start the power sampling thread");
        else
            m->sampler_running = true;
    }
    if (rc < 0) {
        if (errmsg && errcap)
            snprintf(errmsg, errcap, "%s", m->errmsg);
        bso_monitor_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void bso_monitor_free(bso_monitor *m)
{
    if (!m)
        return;
    if (m->sampler_running) {
        pthread_mutex_lock(&m->stop_lock);
        m->stop = true;
        pthread_cond_signal(&m->stop_cond);
        pthread_mutex_unlock(&m->stop_lock);
        pthread_join(m->sampler, NULL);
    }
    if (m->have_nvml)
        bso_nvml_close(&m->nvml);
    pthread_cond_destroy(&m->stop_cond);
    pthread_mutex_destroy(&m->stop_lock);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

size_t bso_monitor_gpu_count(const bso_monitor *m)
{
    return m->n_gpus;
}

int bso_monitor_gpu(const bso_monitor *m, size_t i, struct bso_gpu_info *out)
{
    if (i >= m->n_gpus)
        return BSO_ERANGE;
    *out = m->gpus[i].info;
    return 0;
}

double bso_monitor_max_power_w(const bso_monitor *m)
{
    double sum = 0;
    for (size_t i = 0; i < m->n_gpus; i++)
        sum += m->gpus[i].info.max_power_limit_w;
    return sum;
}

enum bso_energy_source bso_monitor_source(const bso_monitor *m)
{
    /* The weakest of the GPUs' sources, when any GPU is measurable. */
    enum bso_energy_source s = BSO_SOURCE_NONE;
    for (size_t i = 0; i < m->n_gpus; i++) {
        enum bso_energy_source g = m->gpus[i].info.source;
        if (g == BSO_SOURCE_NONE)
            continue;
        if (s == BSO_SOURCE_NONE || g > s)
            s = g;
    }
    if (s != BSO_SOURCE_NONE)
        return s;
    if (m->have_rapl)
        return BSO_SOURCE_RAPL;
    return m->assumed_w > 0 ? BSO_SOURCE_ESTIMATE : BSO_SOURCE_NONE;
}

enum bso_energy_source bso_monitor_cpu_source(const bso_monitor *m)
{
    return m->have_rapl ? BSO_SOURCE_RAPL : BSO_SOURCE_NONE;
}

/* Reads every source at time t. Called with the lock held. */
static int read_all(bso_monitor *m, double t, double *gpu_j, double *cpu_j)
{
    for (size_t i = 0; i < m->n_gpus; i++) {
        int rc = gpu_energy(m, &m->gpus[i], t, &gpu_j[i]);
        if (rc < 0)
            return rc;
    }
    *cpu_j = 0;
    if (m->have_rapl && !bso_rapl_read(&m->rapl, cpu_j))
        return fail(m, BSO_EIO, "RAPL counters stopped answering");
    return 0;
}

static struct window *find(bso_monitor *m, const char *name)
{
    for (size_t i = 0; i < m->n_windows; i++)
        if (strcmp(m->windows[i].name, name) == 0)
            return &m->windows[i];
    return NULL;
}

int bso_monitor_begin(bso_monitor *m, const char *name)
{
    if (!name || strlen(name) >= BSO_WINDOW_NAME_MAX)
        return fail(m, BSO_EINVAL, "a window needs a name of 1 to %d characters",
                    BSO_WINDOW_NAME_MAX - 1);
    pthread_mutex_lock(&m->lock);
    int rc = 0;
    if (find(m, name)) {
        rc = fail(m, BSO_ESTATE, "window '%s' is already open", name);
    } else if (m->n_windows >= MAX_WINDOWS) {
        rc = fail(m, BSO_ERANGE, "more than %d windows open", MAX_WINDOWS);
    } else {
        struct window *w = &m->windows[m->n_windows];
        memset(w, 0, sizeof(*w));
        snprintf(w->name, sizeof w->name, "%s", name);
        w->t0 = bso_os_monotonic_s();
        for (size_t i = 0; i < m->n_gpus; i++) {
            w->util_sum[i] = m->gpus[i].util_sum;
            w->util_n[i] = m->gpus[i].util_n;
        }
        rc = read_all(m, w->t0, w->gpu_j, &w->cpu_j);
        if (rc == 0)
            m->n_windows++;
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* The GPUs' mean busy share over window w: the sampler's readings in it, or one reading now
 * for a window shorter than a sampling period. NAN when NVML does not say. Lock held. */
static double window_utilization(bso_monitor *m, const struct window *w)
{
    double sum = 0;
    size_t known = 0;
    for (size_t i = 0; i < m->n_gpus; i++) {
        struct gpu *g = &m->gpus[i];
        if (!g->utilization_ok)
            continue;
        if (g->util_n == w->util_n[i])
            sample_utilization(m, g);
        if (g->util_n > w->util_n[i]) {
            sum += (g->util_sum - w->util_sum[i]) / (g->util_n - w->util_n[i]);
            known++;
        }
    }
    return known ? sum / (double)known : NAN;
}

int bso_monitor_end(bso_monitor *m, const char *name, struct bso_measurement *out)
{
    pthread_mutex_lock(&m->lock);
    struct window *w = name ? find(m, name) : NULL;
    if (!w) {
        int rc = fail(m, BSO_ENOTFOUND, "no open window '%s'", name ? name : "(null)");
        pthread_mutex_unlock(&m->lock);
        return rc;
    }
    const double t = bso_os_monotonic_s();
    double gpu_j[BSO_MAX_GPUS], cpu_j;
    int rc = read_all(m, t, gpu_j, &cpu_j);
    if (rc < 0) {
        pthread_mutex_unlock(&m->lock);
        return rc;
    }
    memset(out, 0, sizeof(*out));
    out->time_s = t - w->t0;
    out->n_gpus = m->n_gpus;
    double gpu_total = 0;
    for (size_t i = 0; i < m->n_gpus; i++) {
        out->gpu_source[i] = m->gpus[i].info.source;
        out->gpu_energy_j[i] = gpu_j[i] - w->gpu_j[i];
        gpu_total += out->gpu_energy_j[i];
    }
    out->utilization_pct = window_utilization(m, w);
    out->cpu_source = bso_monitor_cpu_source(m);
    out->cpu_energy_j = m->have_rapl ? cpu_j - w->cpu_j : 0;
    out->source = bso_monitor_source(m);
    switch (out->source) {
    case BSO_SOURCE_RAPL:
        out->total_energy_j = out->cpu_energy_j;
        break;
    case BSO_SOURCE_ESTIMATE:
        out->total_energy_j = m->assumed_w * out->time_s;
        out->estimated = true;
        break;
    default:
        out->total_energy_j = gpu_total;
    }
    /* Drop the window, keeping the others in order. */
    size_t k = (size_t)(w - m->windows);
    memmove(w, w + 1, (m->n_windows - k - 1) * sizeof(*w));
    m->n_windows--;
    pthread_mutex_unlock(&m->lock);
    return 0;
}
