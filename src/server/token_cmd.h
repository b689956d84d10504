/* `bso-server token create|list|revoke` (token_cmd.c). */
#ifndef BSO_SERVER_TOKEN_CMD_H
#define BSO_SERVER_TOKEN_CMD_H

#include "server/config.h"

/* Runs the token subcommand cfg names; the process exit status. */
int bso_token_command(const struct bso_config *cfg);

#endif
