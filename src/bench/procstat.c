/* /proc readers; see procstat.h. */
#include "bench/procstat.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bso/error.h"

int bso_procstat_read(pid_t pid, struct bso_procstat *out)
{
    char path[64], line[512];
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return BSO_ENOTFOUND;
    while (fgets(line, sizeof line, f)) {
        long kb;
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            out->peak_rss_mb = (double)kb / 1024.0;
        else if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            out->rss_mb = (double)kb / 1024.0;
    }
    fclose(f);
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return BSO_ENOTFOUND;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields resume after the last ')'.
     * utime and stime are fields 14 and 15, the 12th and 13th after it. */
    char *p = strrchr(buf, ')');
    unsigned long utime, stime;
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return BSO_ENOTFOUND;
    out->cpu_s = (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
    return 0;
}
