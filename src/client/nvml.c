/* NVML through dlopen; see nvml.h. */
#include "client/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool bso_nvml_open(struct nvml *n, char *why, size_t cap)
{
    memset(n, 0, sizeof(*n));
    const char *path = getenv("BSO_NVML_LIBRARY");
    if (!path || !*path)
        path = "libnvidia-ml.so.1";
    n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        snprintf(why, cap, "NVML not loaded (%s)", dlerror());
        return false;
    }
    static const struct {
        const char *symbol;
        size_t offset;
    } table[] = {
        {"nvmlInit_v2", offsetof(struct nvml, init)},
        {"nvmlShutdown", offsetof(struct nvml, shutdown)},
        {"nvmlErrorString", offsetof(struct nvml, error_string)},
        {"nvmlDeviceGetCount_v2", offsetof(struct nvml, count)},
        {"nvmlDeviceGetHandleByIndex_v2", offsetof(struct nvml, handle_by_index)},
        {"nvmlDeviceGetName", offsetof(struct nvml, name)},
        {"nvmlDeviceGetUUID", offsetof(struct nvml, uuid)},
        {"nvmlDeviceGetTotalEnergyConsumption", offsetof(struct nvml, total_energy)},
        {"nvmlDeviceGetPowerUsage", offsetof(struct nvml, power_usage)},
        {"nvmlDeviceGetPowerManagementLimitConstraints", offsetof(struct nvml, limit_constraints)},
        {"nvmlDeviceGetPowerManagementLimit", offsetof(struct nvml, power_limit)},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        void *fn = dlsym(n->lib, table[i].symbol);
        if (!fn) {
            snprintf(why, cap, "NVML at %s lacks %s", path, table[i].symbol);
            dlclose(n->lib);
            n->lib = NULL;
            return false;
        }
        /* Function pointers from dlsym: copied as bytes, the portable way under -Wpedantic. */
        memcpy((char *)n + table[i].offset, &fn, sizeof fn);
    }
    void *util = dlsym(n->lib, "nvmlDeviceGetUtilizationRates");
    if (util)
        memcpy(&n->utilization, &util, sizeof util);
    void *set_limit = dlsym(n->lib, "nvmlDeviceSetPowerManagementLimit");
    if (set_limit)
        memcpy(&n->set_power_limit, &set_limit, sizeof set_limit);
    int rc = n->init();
    if (rc != NVML_OK) {
        snprintf(why, cap, "nvmlInit failed: %s", n->error_string(rc));
        dlclose(n->lib);
        n->lib = NULL;
        return false;
    }
    return true;
}

void bso_nvml_close(struct nvml *n)
{
    if (!n->lib)
        return;
    n->shutdown();
    dlclose(n->lib);
    n->lib = NULL;
}

const char *bso_nvml_error(const struct nvml *n, int rc)
{
    return n->lib ? n->error_string(rc) : "NVML not loaded";
}
