/* Trace loading; see traces.h. */
#include "sim/traces.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Samples per epoch are the public training sets' sizes: CIFAR-100's 50,000 images,
 * ImageNet-1k's 1,281,167, SQuAD v1.1's 88,641 BERT features (384 tokens, stride 128),
 * LibriSpeech's 960 hours (281,241 utterances), MovieLens-1M's 994,169 training ratings with
 * NCF's four negatives each, Sentiment140's 1.6 million tweets. Only the probe's cost uses them. */
static const struct sim_workload builtin[] = {
    {"cifar100", "shufflenetv2", "adadelta", 0.60, true, 100, 1024, 50000},
    {"imagenet", "resnet50", "adadelta", 0.65, true, 100, 256, 1281167},
    {"squad", "bert_base_uncased", "adamw", 84.0, true, 6, 32, 88641},
    {"librispeech", "deepspeech2", "adamw", 40.0, false, 16, 192, 281241},
    {"movielens-1m", "ncf", "adam", 0.41, true, 100, 1024, 4970845},
    {"sentiment140", "bert_base_uncased", "adamw", 0.84, true, 10, 128, 1600000},
};

const struct sim_workload *sim_builtin_workloads(size_t *n)
{
    *n = sizeof builtin / sizeof *builtin;
    return builtin;
}

/* How many columns a line may have, and how long it may be: the traces have eight or so, and a
 * file with more (other measurements beside them) is read for the columns it names. */
#define CSV_MAX_FIELDS 64
#define CSV_MAX_LINE 4096

/* A CSV file read line by line, with the columns named by its header. */
struct csv {
    FILE *f;
    const char *path;
    int line;
    char buf[CSV_MAX_LINE];
    char *field[CSV_MAX_FIELDS];
    int n;
    int col[16]; /* column index of each wanted name */
};

/* Why a line could not be split (split's negative returns). */
enum { CSV_TOO_MANY = -1, CSV_BAD_QUOTE = -2 };

static bool blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* Splits c->buf into fields in place, as RFC 4180 writes them: a field in double quotes may
 * hold commas, and "" within it is one quote; spaces around a field are not part of it (a
 * spreadsheet's or a hand-written file's). 0, or CSV_TOO_MANY or CSV_BAD_QUOTE. */
static int split(struct csv *c)
{
    c->n = 0;
    char *p = c->buf;
    p[strcspn(p, "\r\n")] = '\0';
    for (;;) {
        if (c->n == CSV_MAX_FIELDS)
            return CSV_TOO_MANY;
        while (blank(*p))
            p++;
        char *start = p, *end;
        if (*p == '"') {
            /* Unquoted into place: what is written never passes what is read. */
            char *out = start;
            for (p++;; p++) {
                if (*p == '\0')
                    return CSV_BAD_QUOTE;
                if (*p == '"' && p[1] != '"')
                    break;
                *out++ = *p;
                p += *p == '"'; /* "" is one quote */
            }
            end = out;
            for (p++; blank(*p); p++)
                ;
            if (*p != ',' && *p != '\0')
                return CSV_BAD_QUOTE;
        } else {
            p += strcspn(p, ",");
            end = p;
            while (end > start && blank(end[-1]))
                end--;
        }
        const bool last = *p == '\0';
        *end = '\0';
        c->field[c->n++] = start;
        if (last)
            return 0;
        p++;
    }
}

/* Reads the next line into c->buf: 1, 0 at the end of the file, -1 with err for a line longer
 * than the buffer. */
static int read_line(struct csv *c, char *err, size_t errcap)
{
    if (!fgets(c->buf, sizeof c->buf, c->f))
        return 0;
    c->line++;
    const size_t n = strlen(c->buf);
    if (n == sizeof c->buf - 1 && c->buf[n - 1] != '\n' && !feof(c->f)) {
        snprintf(err, errcap, "%s:%d: a line longer than %d characters", c->path, c->line,
                 CSV_MAX_LINE - 2);
        return -1;
    }
    return 1;
}

/* The message for a line split could not split (its negative return). */
static void split_error(const struct csv *c, int why, char *err, size_t errcap)
{
    if (why == CSV_TOO_MANY)
        snprintf(err, errcap, "%s:%d: more than %d columns", c->path, c->line, CSV_MAX_FIELDS);
    else
        snprintf(err, errcap, "%s:%d: a quoted field is not closed, or text follows its quote",
                 c->path, c->line);
}

/* Opens path and maps each name in wanted to its column. */
static int csv_open(struct csv *c, const char *path, const char *const *wanted, int n_wanted,
                    char *err, size_t errcap)
{
    memset(c, 0, sizeof(*c));
    c->path = path;
    c->f = fopen(path, "r");
    if (!c->f) {
        snprintf(err, errcap, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    const int got = read_line(c, err, errcap);
    if (got <= 0) {
        if (got == 0)
            snprintf(err, errcap, "%s: no header line", path);
        fclose(c->f);
        return -1;
    }
    /* A byte-order mark, as spreadsheets save UTF-8, is not part of the first name. */
    if (strncmp(c->buf, "\xEF\xBB\xBF", 3) == 0)
        memmove(c->buf, c->buf + 3, strlen(c->buf + 3) + 1);
    const int why = split(c);
    if (why < 0) {
        split_error(c, why, err, errcap);
        fclose(c->f);
        return -1;
    }
    for (int i = 0; i < n_wanted; i++) {
        c->col[i] = -1;
        for (int k = 0; k < c->n; k++)
            if (strcmp(c->field[k], wanted[i]) == 0)
                c->col[i] = k;
        if (c->col[i] < 0) {
            snprintf(err, errcap, "%s: the header has no column '%s'", path, wanted[i]);
            fclose(c->f);
            return -1;
        }
    }
    return 0;
}

/* The next row; 1, 0 at the end, -1 with err on a malformed line. */
static int csv_next(struct csv *c, int n_wanted, char *err, size_t errcap)
{
    int got;
    while ((got = read_line(c, err, errcap)) > 0 && c->buf[strspn(c->buf, " \t\r\n")] == '\0')
        ; /* blank lines (one at the end, say) hold no row */
    if (got <= 0)
        return got;
    const int why = split(c);
    if (why < 0) {
        split_error(c, why, err, errcap);
        return -1;
    }
    for (int i = 0; i < n_wanted; i++)
        if (c->col[i] >= c->n) {
            snprintf(err, errcap, "%s:%d: missing columns", c->path, c->line);
            return -1;
        }
    return 1;
}

static const char *cell(struct csv *c, int i)
{
    return c->field[c->col[i]];
}

/* The marks tools write for a missing value (R's NA, Python's None, JSON's null, a dash):
 * in target_epoch, a run that never reached the target, as an empty cell or "nan" is. */
static bool never_marker(const char *s)
{
    static const char *const marks[] = {"na", "n/a", "none", "null", "-"};
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
        if (strcasecmp(s, marks[i]) == 0)
            return true;
    return false;
}

static bool number(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return *s && *end == '\0';
}

/* A count (a batch size, epochs): a number from 1 to 2^53, truncated. Larger values do not fit
 * an integer (the fuzzer's 2.2e72 once did, undefined behaviour). */
static bool count(const char *s, int64_t *v)
{
    double d;
    if (!number(s, &d) || !(d >= 1 && d <= 9007199254740992.0))
        return false;
    *v = (int64_t)d;
    return true;
}

/* true/false as tools write it: true, false (any case), 1, 0, yes, no. */
static bool truth(const char *s, bool *v)
{
    static const char *const yes[] = {"true", "1", "yes"}, *const no[] = {"false", "0", "no"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
            *v = strcasecmp(s, yes[i]) == 0;
            return true;
        }
    return false;
}

int sim_read_workloads(const char *path, struct sim_workload *out, size_t cap, char *err,
                       size_t errcap)
{
    static const char *const cols[] = {"dataset",           "network",          "optimizer",
                                       "target_metric",     "higher_is_better", "max_epochs",
                                       "default_batch_size"};
    struct csv c;
    if (csv_open(&c, path, cols, 7, err, errcap) < 0)
        return -1;
    int samples_col = -1; /* optional */
    for (int k = 0; k < c.n; k++)
        if (strcmp(c.field[k], "samples_per_epoch") == 0)
            samples_col = k;
    int n = 0, rc;
    while ((rc = csv_next(&c, 7, err, errcap)) > 0) {
        if ((size_t)n == cap) {
            snprintf(err, errcap, "%s: more than %zu workloads", path, cap);
            rc = -1;
            break;
        }
        struct sim_workload *w = &out[n];
        double target;
        int64_t max_epochs, def;
        bool higher;
        if (!number(cell(&c, 3), &target) || !count(cell(&c, 5), &max_epochs) ||
            !count(cell(&c, 6), &def) || !truth(cell(&c, 4), &higher)) {
            snprintf(err, errcap, "%s:%d: expected numbers and true/false", path, c.line);
            rc = -1;
            break;
        }
        snprintf(w->dataset, sizeof w->dataset, "%s", cell(&c, 0));
        snprintf(w->network, sizeof w->network, "%s", cell(&c, 1));
        snprintf(w->optimizer, sizeof w->optimizer, "%s", cell(&c, 2));
        w->target = target;
        w->higher_is_better = higher;
        w->max_epochs = max_epochs;
        w->default_bs = def;
        w->samples_per_epoch = 0;
        if (samples_col >= 0 && samples_col < c.n && *c.field[samples_col] &&
            !count(c.field[samples_col], &w->samples_per_epoch)) {
            snprintf(err, errcap, "%s:%d: samples_per_epoch must be a whole number from 1", path,
                     c.line);
            rc = -1;
            break;
        }
        n++;
    }
    fclose(c.f);
    return rc < 0 ? -1 : n;
}

static bool same_workload(struct csv *c, const struct sim_workload *w)
{
    return strcmp(cell(c, 0), w->dataset) == 0 && strcmp(cell(c, 1), w->network) == 0 &&
           strcmp(cell(c, 3), w->optimizer) == 0;
}

static struct sim_bs *bs_slot(struct sim_job *job, int64_t bs, bool create)
{
    for (size_t i = 0; i < job->n_bs; i++)
        if (job->bs[i].bs == bs)
            return &job->bs[i];
    if (!create || job->n_bs == SIM_MAX_BS)
        return NULL;
    struct sim_bs *b = &job->bs[job->n_bs++];
    memset(b, 0, sizeof(*b));
    b->bs = bs;
    return b;
}

/* Records a trained size too large for the GPU, once, keeping the list ascending. */
static void add_unfit(struct sim_job *job, int64_t bs)
{
    size_t k = 0;
    while (k < job->n_unfit && job->unfit[k] < bs)
        k++;
    if ((k < job->n_unfit && job->unfit[k] == bs) || job->n_unfit == SIM_MAX_BS)
        return;
    memmove(&job->unfit[k + 1], &job->unfit[k], (job->n_unfit - k) * sizeof job->unfit[0]);
    job->unfit[k] = bs;
    job->n_unfit++;
}

static int cmp_bs(const void *a, const void *b)
{
    int64_t x = ((const struct sim_bs *)a)->bs, y = ((const struct sim_bs *)b)->bs;
    return (x > y) - (x < y);
}

int sim_load(const char *dir, const char *gpu, const struct sim_workload *w, struct sim_job *job,
             char *err, size_t errcap)
{
    memset(job, 0, sizeof(*job));
    job->w = *w;
    snprintf(job->gpu, sizeof job->gpu, "%s", gpu);
    char path[4096];

    /* Power first: it decides which batch sizes this GPU has. */
    static const char *const pcols[] = {"dataset",      "network",     "batch_size",
                                        "optimizer",    "power_limit", "time_per_epoch",
                                        "average_power"};
    struct csv c;
    snprintf(path, sizeof path, "%s/summary_power_%s.csv", dir, gpu);
    if (csv_open(&c, path, pcols, 7, err, errcap) < 0)
        return -1;
    int rc;
    while ((rc = csv_next(&c, 7, err, errcap)) > 0) {
        if (!same_workload(&c, w))
            continue;
        double pl, t, p;
        int64_t bs;
        if (!count(cell(&c, 2), &bs) || !number(cell(&c, 4), &pl) || !number(cell(&c, 5), &t) ||
            !number(cell(&c, 6), &p) || t <= 0 || p <= 0 || pl <= 0) {
            snprintf(err, errcap, "%s:%d: expected positive numbers", path, c.line);
            rc = -1;
            break;
        }
        struct sim_bs *b = bs_slot(job, bs, true);
        if (!b || b->n_pl == SIM_MAX_PL) {
            snprintf(err, errcap, "%s: too many batch sizes or power limits", path);
            rc = -1;
            break;
        }
        /* Keep power limits ascending. */
        size_t k = b->n_pl++;
        while (k > 0 && b->pl[k - 1] > pl) {
            b->pl[k] = b->pl[k - 1];
            b->time_per_epoch[k] = b->time_per_epoch[k - 1];
            b->power[k] = b->power[k - 1];
            k--;
        }
        b->pl[k] = pl;
        b->time_per_epoch[k] = t;
        b->power[k] = p;
        if (pl > job->max_power)
            job->max_power = pl;
    }
    fclose(c.f);
    if (rc < 0)
        return -1;
    if (job->n_bs == 0) {
        snprintf(err, errcap, "%s has no rows for %s/%s/%s", path, w->dataset, w->network,
                 w->optimizer);
        return -1;
    }

    int64_t largest = 0; /* of the power trace: larger trained sizes do not fit this GPU */
    for (size_t i = 0; i < job->n_bs; i++)
        largest = job->bs[i].bs > largest ? job->bs[i].bs : largest;
    static const char *const tcols[] = {"dataset",   "network",       "batch_size",
                                        "optimizer", "target_metric", "target_epoch"};
    snprintf(path, sizeof path, "%s/summary_train.csv", dir);
    if (csv_open(&c, path, tcols, 6, err, errcap) < 0)
        return -1;
    while ((rc = csv_next(&c, 6, err, errcap)) > 0) {
        double target;
        int64_t bs, epoch = -1;
        if (!same_workload(&c, w) || !number(cell(&c, 4), &target) ||
            target < w->target - 1e-9 * (1 + w->target) ||
            target > w->target + 1e-9 * (1 + w->target))
            continue;
        double e;
        if (!count(cell(&c, 2), &bs) ||
            (*cell(&c, 5) && !number(cell(&c, 5), &e) && !never_marker(cell(&c, 5)))) {
            snprintf(err, errcap, "%s:%d: expected numbers", path, c.line);
            rc = -1;
            break;
        }
        struct sim_bs *b = bs_slot(job, bs, false);
        if (!b && bs > largest)
            add_unfit(job, bs);
        if (!b)
            continue;                      /* no power data for this size on this GPU */
        if (b->n_paths == SIM_MAX_PATHS) { /* not dropped unsaid: the replay would be another */
            snprintf(err, errcap, "%s:%d: more than %d runs of batch size %lld", path, c.line,
                     SIM_MAX_PATHS, (long long)bs);
            rc = -1;
            break;
        }
        /* An empty cell, "nan" or another mark of a missing value (never_marker), or a
         * non-positive epoch: this run never reached the target. */
        if (!*cell(&c, 5) || !count(cell(&c, 5), &epoch))
            epoch = -1;
        b->target_epoch[b->n_paths++] = epoch;
    }
    fclose(c.f);
    if (rc < 0)
        return -1;
    /* Keep the batch sizes that have both power data and runs. */
    size_t kept = 0;
    for (size_t i = 0; i < job->n_bs; i++)
        if (job->bs[i].n_paths > 0)
            job->bs[kept++] = job->bs[i];
    job->n_bs = kept;
    if (kept == 0) {
        snprintf(err, errcap, "%s has no runs of %s/%s/%s with target %g", path, w->dataset,
                 w->network, w->optimizer, w->target);
        return -1;
    }
    qsort(job->bs, job->n_bs, sizeof job->bs[0], cmp_bs);
    /* The default, capped at the largest batch size the GPU trace has (README). */
    job->default_bs = w->default_bs;
    if (job->default_bs > job->bs[job->n_bs - 1].bs)
        job->default_bs = job->bs[job->n_bs - 1].bs;
    bool found = false;
    for (size_t i = 0; i < job->n_bs; i++)
        found |= job->bs[i].bs == job->default_bs;
    if (!found) {
        snprintf(err, errcap, "%s/%s: the default batch size %lld has no data on %s", w->dataset,
                 w->network, (long long)job->default_bs, gpu);
        return -1;
    }
    return 0;
}
