/* `bso end JOB BATCH_SIZE TRIAL`: ends a trial that will not report. */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>

int cmd_end(struct ctx *c)
{
    int64_t bs, n;
    if (cli_parse_i64(c->argv[1], "BATCH_SIZE", &bs) < 0 ||
        cli_parse_i64(c->argv[2], "TRIAL", &n) < 0)
        return 2;
    bso_client *cl = c->cl;
    int status = cli_check(cl, bso_client_end_trial(cl, c->argv[0], bs, n));
    if (status == 0 && !c->json)
        printf("trial %" PRId64 " ended\n", n);
    else if (status == 0)
        puts("null");
    return status;
}
