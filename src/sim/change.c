/* Changes within a job's life; see change.h. */
#include "sim/change.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

static const struct {
    const char *text;
    int sizes;
} selectors[] = {
    {"all", SIM_SIZES_ALL},        {"<=opt", SIM_SIZES_UPTO_OPT}, {"<opt", SIM_SIZES_BELOW_OPT},
    {">=opt", SIM_SIZES_FROM_OPT}, {">opt", SIM_SIZES_ABOVE_OPT}, {"opt", SIM_SIZES_OPT},
};

static int parse_sizes(const char *s, struct sim_change *c)
{
    for (size_t k = 0; k < sizeof selectors / sizeof *selectors; k++)
        if (strcmp(s, selectors[k].text) == 0) {
            c->sizes = selectors[k].sizes;
            return 0;
        }
    long long lo, hi;
    char extra;
    if (sscanf(s, "%lld-%lld%c", &lo, &hi, &extra) == 2 && lo > 0 && hi >= lo) {
        c->sizes = SIM_SIZES_RANGE;
        c->lo = lo;
        c->hi = hi;
        return 0;
    }
    return -1;
}

/* One change, "R:KIND=F[@SIZES]". */
static int parse_one(char *s, struct sim_change *c, char *err, size_t errcap)
{
    memset(c, 0, sizeof *c);
    char *colon = strchr(s, ':'), *eq = colon ? strchr(colon, '=') : NULL;
    if (!colon || !eq) {
        snprintf(err, errcap,
                 "--change '%s' is not R:KIND=FACTOR[@SIZES] (e.g. 20:epochs=1.6@<=opt)", s);
        return -1;
    }
    *colon = *eq = '\0';
    char *end;
    const double r = strtod(s, &end);
    if (!*s || *end || !(r >= 1) || r > 1e6 || r != floor(r)) {
        snprintf(err, errcap, "--change: the recurrence '%s' must be a whole number from 1", s);
        return -1;
    }
    c->recurrence = (int64_t)r;
    const char *kind = colon + 1;
    if (strcmp(kind, "epochs") == 0) {
        c->kind = SIM_CHANGE_EPOCHS;
    } else if (strcmp(kind, "time") == 0) {
        c->kind = SIM_CHANGE_TIME;
    } else if (strcmp(kind, "gpu") == 0) {
        c->kind = SIM_CHANGE_GPU;
        const char *name = eq + 1;
        if (!*name || strlen(name) >= sizeof c->gpu || strchr(name, '@') ||
            strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
                strlen(name)) {
            snprintf(err, errcap, "--change: gpu='%s' must name a GPU of the traces (e.g. a40)",
                     name);
            return -1;
        }
        snprintf(c->gpu, sizeof c->gpu, "%s", name);
        return 0;
    } else {
        snprintf(err, errcap, "--change: unknown kind '%s' (epochs, time or gpu)", kind);
        return -1;
    }
    char *at = strchr(eq + 1, '@');
    if (at)
        *at = '\0';
    c->factor = strtod(eq + 1, &end);
    if (!eq[1] || *end || !(c->factor > 0) || c->factor > 100) {
        snprintf(err, errcap, "--change: the factor '%s' must be a number in (0, 100]", eq + 1);
        return -1;
    }
    if (at && parse_sizes(at + 1, c) < 0) {
        snprintf(err, errcap,
                 "--change: sizes '%s' must be all, <opt, <=opt, opt, >=opt, >opt or a range A-B",
                 at + 1);
        return -1;
    }
    return 0;
}

int sim_change_parse(const char *text, struct sim_changes *out, char *err, size_t errcap)
{
    char buf[1024];
    if (strlen(text) >= sizeof buf) {
        snprintf(err, errcap, "--change is too long");
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *item = strtok_r(buf, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        if (out->n == SIM_MAX_CHANGES) {
            snprintf(err, errcap, "at most %d changes", SIM_MAX_CHANGES);
            return -1;
        }
        if (parse_one(item, &out->items[out->n], err, errcap) < 0)
            return -1;
        out->n++;
    }
    return 0;
}

size_t sim_change_points(const struct sim_changes *c, int64_t *points)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++) {
        bool seen = false;
        for (size_t k = 0; k < n; k++)
            seen |= points[k] == c->items[i].recurrence;
        if (seen)
            continue;
        size_t k = n++;
        for (; k > 0 && points[k - 1] > c->items[i].recurrence; k--)
            points[k] = points[k - 1];
        points[k] = c->items[i].recurrence;
    }
    return n;
}

static bool selected(const struct sim_change *c, const struct sim_job *job, size_t b, size_t opt)
{
    switch (c->sizes) {
    case SIM_SIZES_BELOW_OPT:
        return b < opt;
    case SIM_SIZES_UPTO_OPT:
        return b <= opt;
    case SIM_SIZES_OPT:
        return b == opt;
    case SIM_SIZES_FROM_OPT:
        return b >= opt;
    case SIM_SIZES_ABOVE_OPT:
        return b > opt;
    case SIM_SIZES_RANGE:
        return job->bs[b].bs >= c->lo && job->bs[b].bs <= c->hi;
    default:
        return true;
    }
}

bool sim_change_moves(const struct sim_changes *c, int64_t r)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->items[i].recurrence == r && c->items[i].kind == SIM_CHANGE_GPU)
            return true;
    return false;
}

int sim_change_apply(const struct sim_changes *c, int64_t r, double eta, bool jit,
                     const char *traces_dir, struct sim_job *job, char *err, size_t errcap)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct sim_change *ch = &c->items[i];
        if (ch->recurrence != r || ch->kind != SIM_CHANGE_GPU)
            continue;
        const struct sim_workload w = job->w;
        if (sim_load(traces_dir, ch->gpu, &w, job, err, errcap) < 0)
            return -1;
    }
    const size_t opt = sim_optimum(job, eta, jit);
    for (size_t i = 0; i < c->n; i++) {
        const struct sim_change *ch = &c->items[i];
        if (ch->recurrence != r || ch->kind == SIM_CHANGE_GPU)
            continue;
        for (size_t b = 0; b < job->n_bs; b++) {
            if (!selected(ch, job, b, opt))
                continue;
            struct sim_bs *s = &job->bs[b];
            if (ch->kind == SIM_CHANGE_TIME) {
                for (size_t p = 0; p < s->n_pl; p++)
                    s->time_per_epoch[p] *= ch->factor;
                continue;
            }
            for (size_t k = 0; k < s->n_paths; k++)
                if (s->target_epoch[k] > 0) {
                    /* The small margin keeps an exact product (2 x 1.5) from rounding up. */
                    const double e = ceil((double)s->target_epoch[k] * ch->factor - 1e-9);
                    s->target_epoch[k] = e < 1 ? 1 : (int64_t)e;
                }
        }
    }
    return 0;
}
