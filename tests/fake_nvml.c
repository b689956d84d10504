/*
 * A fake libnvidia-ml for tests, scripted by the file named in BSO_FAKE_NVML. One line per
 * setting; '#' starts a comment:
 *   init RC                      what nvmlInit_v2 returns (default 0)
 *   gpu KEY=VALUE...             one GPU; keys:
 *     name="NVIDIA A100"  uuid=GPU-...  max_mw=400000  limit_mw=300000  power_mw=250000
 *     energy=counter|unsupported|error   power=ok|unsupported
 *     util=N|unsupported   GPU utilisation in percent (default unsupported)
 *     reset_ms=N   the energy counter restarts from 0 at N ms after init (assumes no limit
 *                  change before it)
 *     lost_ms=N    every call on this GPU fails with GPU_IS_LOST from N ms after init
 *     min_mw=N     the lowest settable limit (default 100000)
 *     setlimit=ok|denied|unsupported   what nvmlDeviceSetPowerManagementLimit does
 *     curve=W:P:MS,...   per power limit W (watts): the power drawn P (watts) and the time of
 *                  one training step MS (ms); between two limits both are interpolated. Without
 *                  a curve the GPU draws power_mw whatever its limit, and a step takes 10 ms.
 * The energy counter grows at the power drawn, in real time since init, from a large start
 * value (as a counter since driver load would).
 *
 * Like the driver, the fake keeps a limit once set: with BSO_FAKE_NVML_STATE naming a file,
 * the limits live there ("index limit_mw" lines) across processes. Init is counted: the script
 * is read at the first nvmlInit_v2 and kept until the matching nvmlShutdown.
 * bso_fake_nvml_step_s(index), not part of NVML, tells a test's training loop how long a step
 * takes at the GPU's present limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX 16

/* The NVML calls BSO binds (declared here: NVML's own header is not packaged). */
EXPORT int nvmlInit_v2(void);
EXPORT int nvmlShutdown(void);
EXPORT const char *nvmlErrorString(int rc);
EXPORT int nvmlDeviceGetCount_v2(unsigned *count);
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev);
EXPORT int nvmlDeviceGetName(void *dev, char *buf, unsigned len);
EXPORT int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len);
EXPORT int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj);
EXPORT int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw);
EXPORT int nvmlDeviceGetPowerManagementLimitConstraints(void *dev, unsigned *lo, unsigned *hi);
EXPORT int nvmlDeviceGetPowerManagementLimit(void *dev, unsigned *mw);
EXPORT int nvmlDeviceGetUtilizationRates(void *dev, unsigned *util);
EXPORT int nvmlDeviceSetPowerManagementLimit(void *dev, unsigned mw);
EXPORT double bso_fake_nvml_step_s(unsigned index);

#define MAX_CURVE 16

struct fake_gpu {
    char name[96], uuid[96];
    unsigned max_mw, limit_mw, power_mw;
    int energy; /* 0 counter, 1 unsupported, 2 error */
    int power_unsupported;
    int util; /* percent; -1: unsupported */
    long reset_ms, lost_ms;
    unsigned min_mw;
    int setlimit; /* 0 ok, 4 NO_PERMISSION, 3 NOT_SUPPORTED */
    size_t n_curve;
    double curve_w[MAX_CURVE], curve_power_w[MAX_CURVE], curve_step_ms[MAX_CURVE];
    /* The energy integral: acc_mj up to mark_ms, then the present power. */
    double acc_mj;
    long mark_ms;
};

static struct fake_gpu gpus[MAX];
static unsigned n_gpus;
static int init_rc;
static int init_count;
static struct timespec t0;

static long elapsed_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
}

/* "W:P:MS,W:P:MS...", ascending in W. */
static void parse_curve(const char *val, struct fake_gpu *g)
{
    g->n_curve = 0;
    while (*val && g->n_curve < MAX_CURVE) {
        double w, p, ms;
        int used = 0;
        if (sscanf(val, "%lf:%lf:%lf%n", &w, &p, &ms, &used) != 3)
            break;
        g->curve_w[g->n_curve] = w;
        g->curve_power_w[g->n_curve] = p;
        g->curve_step_ms[g->n_curve] = ms;
        g->n_curve++;
        val += used;
        if (*val == ',')
            val++;
    }
}

/* The curve's value at the GPU's limit, linear between points, flat beyond the ends. */
static double on_curve(const struct fake_gpu *g, const double *y)
{
    const double w = g->limit_mw / 1000.0;
    if (w <= g->curve_w[0])
        return y[0];
    for (size_t i = 1; i < g->n_curve; i++)
        if (w <= g->curve_w[i]) {
            const double f = (w - g->curve_w[i - 1]) / (g->curve_w[i] - g->curve_w[i - 1]);
            return y[i - 1] + f * (y[i] - y[i - 1]);
        }
    return y[g->n_curve - 1];
}

/* The power drawn now, in mW. */
static double drawn_mw(const struct fake_gpu *g)
{
    return g->n_curve ? on_curve(g, g->curve_power_w) * 1000.0 : g->power_mw;
}

static void parse_gpu(char *p, struct fake_gpu *g, unsigned index)
{
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof g->name, "Fake GPU");
    snprintf(g->uuid, sizeof g->uuid, "GPU-fake-%u", index);
    g->max_mw = 300000;
    g->limit_mw = 250000;
    g->power_mw = 200000;
    g->util = -1;
    g->min_mw = 100000;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        char *key = p;
        char *eq = strchr(p, '=');
        if (!eq)
            break;
        *eq = '\0';
        char *val = eq + 1, *end;
        if (*val == '"') {
            val++;
            end = strchr(val, '"');
        } else {
            end = val + strcspn(val, " \t\n");
        }
        if (!end)
            break;
        char saved = *end;
        *end = '\0';
        if (!strcmp(key, "name"))
            snprintf(g->name, sizeof g->name, "%s", val);
        else if (!strcmp(key, "uuid"))
            snprintf(g->uuid, sizeof g->uuid, "%s", val);
        else if (!strcmp(key, "max_mw"))
            g->max_mw = (unsigned)atol(val);
        else if (!strcmp(key, "limit_mw"))
            g->limit_mw = (unsigned)atol(val);
        else if (!strcmp(key, "power_mw"))
            g->power_mw = (unsigned)atol(val);
        else if (!strcmp(key, "energy"))
            g->energy = !strcmp(val, "unsupported") ? 1 : !strcmp(val, "error") ? 2 : 0;
        else if (!strcmp(key, "power"))
            g->power_unsupported = !strcmp(val, "unsupported");
        else if (!strcmp(key, "util"))
            g->util = !strcmp(val, "unsupported") ? -1 : atoi(val);
        else if (!strcmp(key, "reset_ms"))
            g->reset_ms = atol(val);
        else if (!strcmp(key, "lost_ms"))
            g->lost_ms = atol(val);
        else if (!strcmp(key, "min_mw"))
            g->min_mw = (unsigned)atol(val);
        else if (!strcmp(key, "setlimit"))
            g->setlimit = !strcmp(val, "denied") ? 4 : !strcmp(val, "unsupported") ? 3 : 0;
        else if (!strcmp(key, "curve"))
            parse_curve(val, g);
        p = end + (saved ? 1 : 0);
        if (saved == '"')
            p++;
    }
}

/* The limits kept in BSO_FAKE_NVML_STATE, over the script's. */
static void load_state(void)
{
    const char *path = getenv("BSO_FAKE_NVML_STATE");
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    unsigned index, mw;
    while (fscanf(f, "%u %u", &index, &mw) == 2)
        if (index < n_gpus)
            gpus[index].limit_mw = mw;
    fclose(f);
}

static void save_state(void)
{
    const char *path = getenv("BSO_FAKE_NVML_STATE");
    if (!path || !*path)
        return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    for (unsigned i = 0; i < n_gpus; i++)
        fprintf(f, "%u %u\n", i, gpus[i].limit_mw);
    fclose(f);
    rename(tmp, path);
}

EXPORT int nvmlInit_v2(void)
{
    if (init_count > 0) {
        init_count++;
        return 0;
    }
    n_gpus = 0;
    init_rc = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char *path = getenv("BSO_FAKE_NVML");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return 9; /* DRIVER_NOT_LOADED */
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        if (!strncmp(line, "init ", 5))
            init_rc = atoi(line + 5);
        else if (!strncmp(line, "gpu", 3) && n_gpus < MAX) {
            parse_gpu(line + 3, &gpus[n_gpus], n_gpus);
            n_gpus++;
        }
    }
    fclose(f);
    load_state();
    if (init_rc == 0)
        init_count = 1;
    return init_rc;
}

EXPORT int nvmlShutdown(void)
{
    if (init_count > 0)
        init_count--;
    return 0;
}

EXPORT const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case 0:
        return "Success";
    case 2:
        return "Invalid Argument";
    case 3:
        return "Not Supported";
    case 4:
        return "Insufficient Permissions";
    case 9:
        return "Driver Not Loaded";
    case 15:
        return "GPU is lost";
    default:
        return "Unknown Error";
    }
}

EXPORT int nvmlDeviceGetCount_v2(unsigned *count)
{
    *count = n_gpus;
    return 0;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev)
{
    if (i >= n_gpus)
        return 2;
    *dev = &gpus[i];
    return 0;
}

static int check(void *dev)
{
    struct fake_gpu *g = dev;
    return g->lost_ms > 0 && elapsed_ms() >= g->lost_ms ? 15 : 0;
}

EXPORT int nvmlDeviceGetName(void *dev, char *buf, unsigned len)
{
    snprintf(buf, len, "%s", ((struct fake_gpu *)dev)->name);
    return check(dev);
}

EXPORT int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len)
{
    snprintf(buf, len, "%s", ((struct fake_gpu *)dev)->uuid);
    return check(dev);
}

EXPORT int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj)
{
    struct fake_gpu *g = dev;
    if (check(dev))
        return 15;
    if (g->energy == 1)
        return 3;
    if (g->energy == 2)
        return 999;
    const long ms = elapsed_ms();
    double total = g->acc_mj + drawn_mw(g) * (double)(ms - g->mark_ms) / 1000.0;
    double start = 123456789.0; /* energy since "driver load" */
    if (g->reset_ms > 0 && ms >= g->reset_ms) {
        total -= drawn_mw(g) * (double)g->reset_ms / 1000.0;
        start = 0;
    }
    *mj = (unsigned long long)(start + total);
    return 0;
}

EXPORT int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw)
{
    struct fake_gpu *g = dev;
    if (check(dev))
        return 15;
    if (g->power_unsupported)
        return 3;
    *mw = (unsigned)drawn_mw(g);
    return 0;
}

EXPORT int nvmlDeviceGetPowerManagementLimitConstraints(void *dev, unsigned *lo, unsigned *hi)
{
    *lo = ((struct fake_gpu *)dev)->min_mw;
    *hi = ((struct fake_gpu *)dev)->max_mw;
    return check(dev);
}

EXPORT int nvmlDeviceGetPowerManagementLimit(void *dev, unsigned *mw)
{
    *mw = ((struct fake_gpu *)dev)->limit_mw;
    return check(dev);
}

/* nvmlUtilization_t is {unsigned gpu, memory}. */
EXPORT int nvmlDeviceGetUtilizationRates(void *dev, unsigned *util)
{
    struct fake_gpu *g = dev;
    if (check(dev))
        return 15;
    if (g->util < 0)
        return 3;
    util[0] = (unsigned)g->util;
    util[1] = (unsigned)g->util / 2;
    return 0;
}

EXPORT int nvmlDeviceSetPowerManagementLimit(void *dev, unsigned mw)
{
    struct fake_gpu *g = dev;
    if (check(dev))
        return 15;
    if (g->setlimit)
        return g->setlimit;
    if (mw < g->min_mw || mw > g->max_mw)
        return 2;
    const long ms = elapsed_ms();
    g->acc_mj += drawn_mw(g) * (double)(ms - g->mark_ms) / 1000.0;
    g->mark_ms = ms;
    g->limit_mw = mw;
    save_state();
    return 0;
}

EXPORT double bso_fake_nvml_step_s(unsigned index)
{
    if (index >= n_gpus)
        return 0.01;
    const struct fake_gpu *g = &gpus[index];
    return g->n_curve ? on_curve(g, g->curve_step_ms) / 1000.0 : 0.01;
}
