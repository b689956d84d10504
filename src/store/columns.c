/* Text columns shared by the storage backends; see columns.h. */
#include "store/columns.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"

int bso_column_trial_type(const char *t)
{
    return strcmp(t, "MAB") == 0          ? BSO_TRIAL_MAB
           : strcmp(t, "Concurrent") == 0 ? BSO_TRIAL_CONCURRENT
                                          : BSO_TRIAL_EXPLORATION;
}

int bso_column_trial_status(const char *t)
{
    return strcmp(t, "Succeeded") == 0 ? BSO_TRIAL_SUCCEEDED
           : strcmp(t, "Failed") == 0  ? BSO_TRIAL_FAILED
                                       : BSO_TRIAL_DISPATCHED;
}

int bso_column_parse_sizes(const char *text, struct bso_job_spec *spec)
{
    const char *p = text;
    size_t n = 0;
    if (*p++ != '[')
        return BSO_EPARSE;
    while (*p && *p != ']') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || n >= BSO_MAX_BATCH_SIZES)
            return BSO_EPARSE;
        spec->batch_sizes[n++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    spec->n_batch_sizes = n;
    return *p == ']' ? 0 : BSO_EPARSE;
}

/* %.17g keeps every bit. */
char *bso_column_format_recent(const struct bso_arm *a)
{
    size_t cap = 3 + a->n_recent * 48;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    size_t o = 0;
    buf[o++] = '[';
    for (size_t i = 0; i < a->n_recent; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s[%" PRId64 ",%.17g]", i ? "," : "",
                              a->recent[i].trial_number, a->recent[i].reward);
    buf[o++] = ']';
    buf[o] = '\0';
    return buf;
}

int bso_column_parse_recent(const char *text, struct bso_arm *a)
{
    size_t n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '[';
    n = n > 0 ? n - 1 : 0;
    a->recent = n ? malloc(n * sizeof(*a->recent)) : NULL;
    if (n && !a->recent)
        return BSO_ENOMEM;
    a->cap_recent = n;
    a->n_recent = 0;
    const char *p = text + 1;
    while (a->n_recent < n) {
        p = strchr(p, '[');
        if (!p)
            return BSO_EPARSE;
        char *end;
        long long number = strtoll(p + 1, &end, 10);
        if (*end != ',')
            return BSO_EPARSE;
        double reward = strtod(end + 1, &end);
        if (*end != ']')
            return BSO_EPARSE;
        a->recent[a->n_recent++] = (struct bso_reward){number, reward};
        p = end;
    }
    return 0;
}
