/*
 * libbso's energy monitor: measurement windows (begin/end by name, nestable) that return elapsed
 * seconds and joules per GPU and in total, and say where every number came from.
 *
 * Sources, best first:
 *   nvml-counter  NVML's total-energy counter (Volta and newer)
 *   nvml-power    NVML power readings sampled by a background thread and integrated (older
 *                 GPUs, or when the counter is unsupported)
 *   rapl          CPU package energy from /sys/class/powercap (reported apart; it becomes the
 *                 total only when no GPU can be measured)
 *   estimate      declared power (BSO_ASSUMED_POWER_W, or the option) times time: used only when
 *                 nothing can be measured, and always labelled so
 *
 * GPUs are picked by NVML index, or by CUDA_VISIBLE_DEVICES (indices or GPU-UUIDs), or all.
 * A monitor may be used from several threads; each window is begun and ended once.
 */
#ifndef BSO_MONITOR_H
#define BSO_MONITOR_H

#include <stdbool.h>
#include <stddef.h>

#include "bso/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum bso_energy_source {
    BSO_SOURCE_NONE = 0,
    BSO_SOURCE_NVML_COUNTER,
    BSO_SOURCE_NVML_POWER,
    BSO_SOURCE_RAPL,
    BSO_SOURCE_ESTIMATE,
};

/* "none", "nvml-counter", "nvml-power", "rapl", "estimate". */
BSO_API const char *bso_energy_source_name(enum bso_energy_source s);

#define BSO_MAX_GPUS 32

struct bso_gpu_info {
    int index; /* NVML index */
    char name[96];
    char uuid[96];
    double max_power_limit_w; /* the largest settable power limit */
    double power_limit_w;     /* the limit in force */
    enum bso_energy_source source;
};

struct bso_monitor_options {
    const int *gpus; /* NVML indices to watch; NULL: CUDA_VISIBLE_DEVICES, else every GPU */
    size_t n_gpus;
    bool cpu;               /* also measure CPU packages through RAPL (default true) */
    double assumed_power_w; /* > 0: the estimate's power; 0: BSO_ASSUMED_POWER_W, if set */
    int sample_ms;          /* power sampling period (default 50 ms) */
};

BSO_API void bso_monitor_options_init(struct bso_monitor_options *opt);

typedef struct bso_monitor bso_monitor;

/* Opens NVML and RAPL as available. BSO_ENODEV when nothing can be measured and no power is
 * declared for an estimate (the message says what to set); BSO_EINVAL for a bad GPU choice. On
 * failure *out is NULL and errmsg (may be NULL, errcap bytes) says why. */
BSO_API int bso_monitor_new(const struct bso_monitor_options *opt, bso_monitor **out, char *errmsg,
                            size_t errcap);
/* Stops the sampler and closes NVML. NULL is a no-op. */
BSO_API void bso_monitor_free(bso_monitor *m);
/* Why the last failing call failed. */
BSO_API const char *bso_monitor_errmsg(const bso_monitor *m);

BSO_API size_t bso_monitor_gpu_count(const bso_monitor *m);
BSO_API int bso_monitor_gpu(const bso_monitor *m, size_t i, struct bso_gpu_info *out);
/* The job's max_power as Zeus computes it: each GPU's largest power limit in whole watts,
 * summed. 0 without GPUs. */
BSO_API double bso_monitor_max_power_w(const bso_monitor *m);
/* Where the total of a measurement will come from, and where CPU energy comes from. */
BSO_API enum bso_energy_source bso_monitor_source(const bso_monitor *m);
BSO_API enum bso_energy_source bso_monitor_cpu_source(const bso_monitor *m);

#define BSO_WINDOW_NAME_MAX 64

/* Starts a window. BSO_ESTATE if a window of that name is open, BSO_ERANGE past 32 windows. */
BSO_API int bso_monitor_begin(bso_monitor *m, const char *name);

struct bso_measurement {
    double time_s;
    double total_energy_j;         /* the job's energy: GPUs, else CPU (RAPL), else estimate */
    enum bso_energy_source source; /* where total_energy_j came from (the weakest GPU source) */
    bool estimated;                /* total_energy_j is an estimate, not a measurement */
    size_t n_gpus;
    double gpu_energy_j[BSO_MAX_GPUS];
    enum bso_energy_source gpu_source[BSO_MAX_GPUS];
    double cpu_energy_j; /* when cpu_source is rapl */
    enum bso_energy_source cpu_source;
    /* The watched GPUs' mean busy share over the window, in percent (NVML's utilisation,
     * sampled with the power); NAN when NVML does not report it. A low value while the
     * batch size grows says the input pipeline, not the GPU, limits throughput. */
    double utilization_pct;
};

/* Ends a window and writes what it measured. BSO_ENOTFOUND for an unknown name; BSO_EIO when a
 * device stopped answering (the window stays open). */
BSO_API int bso_monitor_end(bso_monitor *m, const char *name, struct bso_measurement *out);

#ifdef __cplusplus
}
#endif
#endif
