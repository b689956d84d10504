/*
 * NVML loaded at run time with dlopen, so nothing is needed at build time and a machine without
 * the NVIDIA driver simply has no GPUs. Only the few calls BSO uses are bound. The library is
 * BSO_NVML_LIBRARY when set (tests point it at a fake), else libnvidia-ml.so.1.
 */
#ifndef BSO_CLIENT_NVML_H
#define BSO_CLIENT_NVML_H

#include <stdbool.h>
#include <stddef.h>

/* NVML return codes we act on. */
enum {
    NVML_OK = 0,
    NVML_NOT_SUPPORTED = 3,
    NVML_NO_PERMISSION = 4,
    NVML_INVALID_ARGUMENT = 2,
    NVML_GPU_IS_LOST = 15,
};

typedef void *nvml_device;

struct nvml {
    void *lib;
    int (*init)(void);
    int (*shutdown)(void);
    const char *(*error_string)(int);
    int (*count)(unsigned *);
    int (*handle_by_index)(unsigned, nvml_device *);
    int (*name)(nvml_device, char *, unsigned);
    int (*uuid)(nvml_device, char *, unsigned);
    int (*total_energy)(nvml_device, unsigned long long *);        /* mJ since driver load */
    int (*power_usage)(nvml_device, unsigned *);                   /* mW */
    int (*limit_constraints)(nvml_device, unsigned *, unsigned *); /* mW */
    int (*power_limit)(nvml_device, unsigned *);                   /* mW */
    /* Optional (NULL when the library lacks it): nvmlDeviceGetUtilizationRates, whose struct
     * is {unsigned gpu, memory}, percent of the last sample period busy. */
    int (*utilization)(nvml_device, unsigned *);
    /* Optional: nvmlDeviceSetPowerManagementLimit (mW; needs root or CAP_SYS_ADMIN). */
    int (*set_power_limit)(nvml_device, unsigned);
};

/* Loads and initialises NVML. false (with a reason in why) when there is no usable NVML. */
bool bso_nvml_open(struct nvml *n, char *why, size_t cap);
void bso_nvml_close(struct nvml *n);
/* A printable reason for an NVML return code. */
const char *bso_nvml_error(const struct nvml *n, int rc);

#endif
