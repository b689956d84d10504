/* `bso next JOB`: the batch size of a new trial. */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>

int cmd_next(struct ctx *c)
{
    bso_client *cl = c->cl;
    int64_t bs, n;
    int status = cli_check(cl, bso_client_next(cl, c->argv[0], &bs, &n));
    if (status == 0) {
        if (c->json)
            cli_print_body(cl);
        else
            printf("batch size %" PRId64 " (trial %" PRId64 ")\n", bs, n);
    }
    return status;
}
