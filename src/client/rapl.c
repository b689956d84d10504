/* RAPL through powercap; see rapl.h. */
#include "client/rapl.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool read_number(const char *path, double *v)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    unsigned long long x;
    bool ok = fscanf(f, "%llu", &x) == 1;
    fclose(f);
    if (ok)
        *v = (double)x;
    return ok;
}

bool bso_rapl_open(struct rapl *r, char *why, size_t cap)
{
    memset(r, 0, sizeof(*r));
    const char *root = getenv("BSO_POWERCAP_ROOT");
    if (!root || !*root)
        root = "/sys/class/powercap";
    DIR *d = opendir(root);
    if (!d) {
        snprintf(why, cap, "no powercap interface at %s", root);
        return false;
    }
    struct dirent *e;
    bool unreadable = false;
    while ((e = readdir(d)) && r->n < RAPL_MAX_DOMAINS) {
        /* Package domains are intel-rapl:N; sub-domains (intel-rapl:N:M) are inside them. */
        const char *colon = strchr(e->d_name, ':');
        if (strncmp(e->d_name, "intel-rapl:", 11) != 0 || strchr(colon + 1, ':'))
            continue;
        char range[600];
        snprintf(r->path[r->n], sizeof r->path[r->n], "%s/%s/energy_uj", root, e->d_name);
        snprintf(range, sizeof range, "%s/%s/max_energy_range_uj", root, e->d_name);
        double now;
        if (!read_number(r->path[r->n], &now) || !read_number(range, &r->range_uj[r->n])) {
            unreadable = true; /* recent kernels keep energy_uj to root */
            continue;
        }
        r->last_uj[r->n] = now;
        r->n++;
    }
    closedir(d);
    if (r->n == 0)
        snprintf(why, cap, "%s",
                 unreadable ? "RAPL counters are not readable (root only?)"
                            : "no RAPL package domains");
    return r->n > 0;
}

bool bso_rapl_read(struct rapl *r, double *joules)
{
    for (size_t i = 0; i < r->n; i++) {
        double now;
        if (!read_number(r->path[i], &now))
            return false;
        double delta = now - r->last_uj[i];
        if (delta < 0) /* the counter wrapped */
            delta += r->range_uj[i];
        r->total_j += delta / 1e6;
        r->last_uj[i] = now;
    }
    *joules = r->total_j;
    return true;
}
