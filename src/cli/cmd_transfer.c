/* `bso transfer OLD NEW`: job NEW starts from what job OLD learnt of each batch size's epochs. */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int cmd_transfer(struct ctx *c)
{
    char path[900];
    cli_job_path(c->argv[1], "/transfer", path, sizeof path);
    json_t *body = json_pack("{s:s}", "from", c->argv[0]);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return cli_die("out of memory");
    json_t *job;
    const int status = cli_post_for_job(c, path, text, &job);
    free(text);
    if (status != 0 || !job)
        return status;
    json_t *origin = json_object_get(job, "transferred_from");
    const int64_t sizes = (int64_t)json_integer_value(json_object_get(origin, "batch_sizes"));
    if (sizes == 0) /* not an error: the new job explores as a fresh one would */
        printf("%s has not reached the target at any batch size yet: %s starts afresh (run the "
               "transfer again once %s has learnt)\n",
               c->argv[0], c->argv[1], c->argv[0]);
    else
        printf("%s starts from %s's epochs-to-target at %" PRId64
               " batch size%s; its costs per epoch are measured afresh\n",
               c->argv[1], c->argv[0], sizes, sizes == 1 ? "" : "s");
    json_decref(job);
    return 0;
}
