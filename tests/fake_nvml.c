/*
 * A fake libnvidia-ml for tests, scripted by the file named in BSO_FAKE_NVML. One line per
 * setting; '#' starts a comment:
 *   init RC                      what nvmlInit_v2 returns (default 0)
 *   gpu KEY=VALUE...             one GPU; keys:
 *     name="NVIDIA A100"  uuid=GPU-...  max_mw=400000  limit_mw=300000  power_mw=250000
 *     energy=counter|unsupported|error   power=ok|unsupported
 *     util=N|unsupported   GPU utilisation in percent (default unsupported)
 *     reset_ms=N   the energy counter restarts from 0 at N ms after init
 *     lost_ms=N    every call on this GPU fails with GPU_IS_LOST from N ms after init
 * The energy counter grows at power_mw, in real time since init, from a large start value (as
 * a counter since driver load would).
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

struct fake_gpu {
    char name[96], uuid[96];
    unsigned max_mw, limit_mw, power_mw;
    int energy; /* 0 counter, 1 unsupported, 2 error */
    int power_unsupported;
    int util; /* percent; -1: unsupported */
    long reset_ms, lost_ms;
};

static struct fake_gpu gpus[MAX];
static unsigned n_gpus;
static int init_rc;
static struct timespec t0;

static long elapsed_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
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
        p = end + (saved ? 1 : 0);
        if (saved == '"')
            p++;
    }
}

EXPORT int nvmlInit_v2(void)
{
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
    return init_rc;
}

EXPORT int nvmlShutdown(void)
{
    return 0;
}

EXPORT const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case 0:
        return "Success";
    case 3:
        return "Not Supported";
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
    long ms = elapsed_ms();
    unsigned long long start = 123456789ULL; /* energy since "driver load" */
    if (g->reset_ms > 0 && ms >= g->reset_ms) {
        ms -= g->reset_ms;
        start = 0;
    }
    *mj = start + (unsigned long long)g->power_mw * (unsigned long long)ms / 1000ULL;
    return 0;
}

EXPORT int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw)
{
    struct fake_gpu *g = dev;
    if (check(dev))
        return 15;
    if (g->power_unsupported)
        return 3;
    *mw = g->power_mw;
    return 0;
}

EXPORT int nvmlDeviceGetPowerManagementLimitConstraints(void *dev, unsigned *lo, unsigned *hi)
{
    *lo = 100000;
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
