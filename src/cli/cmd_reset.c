/* `bso reset JOB`: the job forgets what it learned and explores again. */
#include "cli/cli.h"

#include <stdio.h>

int cmd_reset(struct ctx *c)
{
    bso_client *cl = c->cl;
    char path[900];
    cli_job_path(c->argv[0], "/reset", path, sizeof path);
    int status = cli_check(cl, bso_client_post(cl, path, NULL));
    if (status == 0) {
        if (c->json)
            cli_print_body(cl);
        else
            printf("reset %s: it explores again from its default batch size\n", c->argv[0]);
    }
    return status;
}
