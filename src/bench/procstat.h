/* What the kernel says of another process (the server under load): peak RSS and CPU time. */
#ifndef BSO_BENCH_PROCSTAT_H
#define BSO_BENCH_PROCSTAT_H

#include <sys/types.h>

struct bso_procstat {
    double peak_rss_mb; /* VmHWM */
    double rss_mb;      /* VmRSS */
    double cpu_s;       /* user + system */
};

/* Reads /proc/PID; 0, or BSO_ENOTFOUND when the process is gone or unreadable. */
int bso_procstat_read(pid_t pid, struct bso_procstat *out);

#endif
