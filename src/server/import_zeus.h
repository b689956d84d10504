/*
 * `bso-server import-zeus`: brings the jobs a Zeus BSO server learnt (its "Job", "BatchSize",
 * "Trial" and "GaussianTsArmState" tables) into BSO's database, to go on under the zeus policy
 * exactly as Zeus would: spec, stage, trials with their numbers, results and timestamps,
 * trials still in flight, arms and the bandit's generator state.
 *
 * Everything is read and checked before anything is written: a database that is not Zeus's, a
 * newer schema, or a row that breaks an invariant stops the import with a message and writes
 * nothing. A job that exists here already is skipped when it is the same (same spec, stage and
 * trials: importing twice changes nothing), refused when it differs unless --replace.
 */
#ifndef BSO_SERVER_IMPORT_ZEUS_H
#define BSO_SERVER_IMPORT_ZEUS_H

#include "server/config.h"

/* Runs the command; the process's exit status (0, or 1 with the reason on stderr). */
int bso_import_zeus_command(const struct bso_config *cfg);

#endif
