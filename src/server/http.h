/*
 * The HTTP side of bso-server on libmicrohttpd: a thread pool on epoll, connection limits and
 * timeouts, request bodies collected up to a size limit (413 beyond), and dispatch through the
 * route table in routes.c.
 */
#ifndef BSO_SERVER_HTTP_H
#define BSO_SERVER_HTTP_H

#include <stddef.h>

#include "server/config.h"
#include "store/store.h"

struct bso_server;

/* Starts listening as cfg says, serving from store (which must outlive the server). */
int bso_server_start(const struct bso_config *cfg, struct bso_store *store, struct bso_server **out,
                     char *err, size_t errcap);
/* The port actually bound (useful with --port 0). */
int bso_server_port(const struct bso_server *srv);
/* Stops accepting, lets in-flight requests finish, and frees the server. NULL is a no-op. */
void bso_server_stop(struct bso_server *srv);

#endif
