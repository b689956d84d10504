/* `bso delete JOB`: deletes a job and its history. */
#include "cli/cli.h"

int cmd_delete(struct ctx *c)
{
    bso_client *cl = c->cl;
    int status = cli_check(cl, bso_client_delete(cl, c->argv[0]));
    if (status == 0)
        puts(c->json ? "null" : "deleted");
    return status;
}
