/* `bso changed JOB`: the user says the job changed (new data, a new model version); the next
 * run at each batch size the job knows decides whether the change matters there. */
#include "cli/cli.h"

#include <stdio.h>

/* The sizes the declaration left close to their alarm: each one's change_evidence (the share
 * of the evidence its alarm needs) is at least half after it. */
static int watched_sizes(const json_t *job)
{
    int n = 0;
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(job, "batch_size_stats"), i, s)
    {
        const json_t *e = json_object_get(s, "change_evidence");
        n += json_is_number(e) && json_number_value(e) >= 0.5;
    }
    return n;
}

int cmd_changed(struct ctx *c)
{
    char path[900];
    cli_job_path(c->argv[0], "/changed", path, sizeof path);
    json_t *job;
    const int status = cli_post_for_job(c, path, NULL, &job);
    if (status != 0 || !job)
        return status;
    const int n = watched_sizes(job);
    if (n == 0) /* not an error: nothing learnt yet, so nothing to re-check */
        printf("%s has not reached the target at any batch size yet: it goes on exploring\n",
               c->argv[0]);
    else
        printf("%s changed: the next run at each of the %d batch size%s it knows decides whether "
               "the change matters there (then it explores again); until one does, nothing is "
               "forgotten\n",
               c->argv[0], n, n == 1 ? "" : "s");
    json_decref(job);
    return 0;
}
