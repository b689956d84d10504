/* `bso register SPEC.json`: registers a job from its JSON spec (- reads standard input). */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_register(struct ctx *c)
{
    char *spec = cli_read_file(c->argv[0]);
    if (!spec)
        return cli_die("cannot read %s: %s", c->argv[0], strerror(errno));
    bso_client *cl = c->cl;
    char id[BSO_CLIENT_ID_MAX];
    bool created;
    int status = cli_check(cl, bso_client_register(cl, spec, id, &created));
    if (status == 0) {
        if (c->json)
            cli_print_body(cl);
        else
            printf("%s %s\n", id, created ? "registered" : "already registered, same spec");
    }
    free(spec);
    return status;
}
