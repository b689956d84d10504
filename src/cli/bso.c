/*
 * bso: the command line for a BSO server and for the energy monitor. One row of `commands` per
 * subcommand; `bso help` or `bso CMD --help` explains each. The server comes from --server or
 * BSO_SERVER_URL (default http://127.0.0.1:8000). --json prints the server's JSON as it is.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmd_help(struct ctx *c);

static const struct command commands[] = {
    {"jobs", 0, true, "", "list the server's jobs", cmd_jobs},
    {"show", 1, true, "JOB",
     "a job's stage, best batch size so far, and what the policy knows of each size", cmd_show},
    {"trials", 1, true, "JOB", "every trial of a job", cmd_trials},
    {"register", 1, true, "SPEC.json", "register a job from a JSON spec (- reads standard input)",
     cmd_register},
    {"next", 1, true, "JOB", "ask for the batch size of a new trial", cmd_next},
    {"report", -1, true,
     "JOB BATCH_SIZE TRIAL TIME_S ENERGY_J METRIC EPOCH [SOURCE] [--samples N "
     "--mean-batch-size X] | JOB --html FILE",
     "report a trial's cumulative time and energy after an evaluation (with the samples and "
     "mean batch size of a run whose batch size changes); with --html, the job's dashboard "
     "page as one self-contained file",
     cmd_report},
    {"end", 3, true, "JOB BATCH_SIZE TRIAL", "end a trial that will not report", cmd_end},
    {"delete", 1, true, "JOB", "delete a job and its history", cmd_delete},
    {"reset", 1, true, "JOB", "forget what a job learned: it explores again (keeps its spec)",
     cmd_reset},
    {"changed", 1, true, "JOB",
     "say that a job changed (new data, a new model version): its next runs re-check what it "
     "learnt, and it explores again where the change matters",
     cmd_changed},
    {"transfer", 2, true, "OLD NEW",
     "start job NEW (the same workload on other hardware) from what job OLD learnt of each "
     "batch size's epochs",
     cmd_transfer},
    {"probe", -1, true, "JOB [PROFILE.json]",
     "the job's device profile (bso.probe): which sizes fit, samples/s and J/sample, with bars; "
     "with a file (- reads standard input), stores that profile first (POST /jobs/ID/profile)",
     cmd_probe},
    {"gpus", -1, false, "[--restore-power]",
     "the GPUs the monitor sees and where energy will come from; --restore-power puts back "
     "the power limits of tuning runs that were killed",
     cmd_gpus},
    {"measure", -1, false, "-- CMD [ARGS...]",
     "run a command and print its time and energy (to stderr)", cmd_measure},
    {"help", -1, false, "[CMD]", "this text", cmd_help},
};
#define N_COMMANDS (sizeof commands / sizeof *commands)

static void usage_of(const struct command *cmd, FILE *f)
{
    fprintf(f, "usage: bso [--server URL] [--token T] [--cacert PEM] [--json] %s %s\n  %s\n",
            cmd->name, cmd->args, cmd->help);
}

static int cmd_help(struct ctx *c)
{
    if (c->argc == 1) {
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (strcmp(commands[i].name, c->argv[0]) == 0) {
                usage_of(&commands[i], stdout);
                return 0;
            }
        return cli_die("no command '%s' (see bso help)", c->argv[0]), 2;
    }
    printf("usage: bso [--server URL] [--token T] [--cacert PEM] [--json] COMMAND [ARGS...]\n\n"
           "The command line of BSO, the batch size optimizer for recurring training jobs.\n"
           "The server is --server, or BSO_SERVER_URL, or http://127.0.0.1:8000. The API token\n"
           "is --token or BSO_TOKEN; an https server's CA certificate --cacert or BSO_CACERT.\n\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        printf("  %-9s %-52s %s\n", commands[i].name, commands[i].args, commands[i].help);
    printf("\n`bso COMMAND --help` explains one command.\n");
    return 0;
}

int main(int argc, char **argv)
{
    struct ctx c = {.server = getenv("BSO_SERVER_URL")};
    const char *token = NULL, *cacert = NULL; /* else libbso reads BSO_TOKEN, BSO_CACERT */
    if (!c.server || !*c.server)
        c.server = "http://127.0.0.1:8000";
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-' && argv[i][2]; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            c.json = true;
        } else if (strcmp(argv[i], "--server") == 0 && i + 1 < argc) {
            c.server = argv[++i];
        } else if (strncmp(argv[i], "--server=", 9) == 0) {
            c.server = argv[i] + 9;
        } else if (strcmp(argv[i], "--token") == 0 && i + 1 < argc) {
            token = argv[++i];
        } else if (strncmp(argv[i], "--token=", 8) == 0) {
            token = argv[i] + 8;
        } else if (strcmp(argv[i], "--cacert") == 0 && i + 1 < argc) {
            cacert = argv[++i];
        } else if (strncmp(argv[i], "--cacert=", 9) == 0) {
            cacert = argv[i] + 9;
        } else if (strcmp(argv[i], "--help") == 0) {
            c.argc = 0;
            return cmd_help(&c);
        } else {
            return cli_die("unknown option '%s' (see bso help)", argv[i]), 2;
        }
    }
    if (i >= argc) {
        cmd_help(&c);
        return 2;
    }
    const struct command *cmd = NULL;
    for (size_t k = 0; k < N_COMMANDS; k++)
        if (strcmp(commands[k].name, argv[i]) == 0)
            cmd = &commands[k];
    if (!cmd)
        return cli_die("no command '%s' (see bso help)", argv[i]), 2;
    c.argc = argc - i - 1;
    c.argv = argv + i + 1;
    for (int k = 0; k < c.argc; k++) {
        if (strcmp(c.argv[k], "--") == 0) { /* measure: everything after -- is the command */
            c.argv += k + 1;
            c.argc -= k + 1;
            break;
        }
        if (strcmp(c.argv[k], "--help") == 0) {
            usage_of(cmd, stdout);
            return 0;
        }
        if (strcmp(c.argv[k], "--json") == 0) { /* accepted after the command too */
            c.json = true;
            memmove(&c.argv[k], &c.argv[k + 1], (size_t)(c.argc - k - 1) * sizeof(char *));
            c.argc--;
            k--;
        }
    }
    if (cmd->nargs >= 0 && c.argc != cmd->nargs) {
        usage_of(cmd, stderr);
        return 2;
    }
    if (cmd->client && bso_client_new(c.server, &c.cl) < 0)
        return cli_die("no server URL to talk to (--server or BSO_SERVER_URL)");
    if (c.cl && ((token && bso_client_set_token(c.cl, token) < 0) ||
                 (cacert && bso_client_set_cacert(c.cl, cacert) < 0))) {
        bso_client_free(c.cl);
        return cli_die("--token or --cacert cannot be used (a line break in the token?)");
    }
    int status = cmd->run(&c);
    bso_client_free(c.cl);
    return status;
}
