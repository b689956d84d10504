/* `bso measure -- CMD [ARGS...]`: runs a command and prints its time and energy. */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int cmd_measure(struct ctx *c)
{
    if (c->argc < 1)
        return cli_die("expected -- CMD [ARGS...]"), 2;
    bso_monitor *m;
    if (cli_open_monitor(&m))
        return 1;
    if (bso_monitor_begin(m, "measure") < 0) {
        cli_die("%s", bso_monitor_errmsg(m));
        bso_monitor_free(m);
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        execvp(c->argv[0], c->argv);
        fprintf(stderr, "bso: cannot run %s: %s\n", c->argv[0], strerror(errno));
        _exit(127);
    }
    int wstatus = 0;
    /* The command gets the terminal's signals; we wait for it either way. */
    signal(SIGINT, SIG_IGN);
    while (pid > 0 && waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    struct bso_measurement w;
    int rc = bso_monitor_end(m, "measure", &w);
    if (rc < 0) {
        cli_die("%s", bso_monitor_errmsg(m));
        bso_monitor_free(m);
        return 1;
    }
    if (c->json) {
        json_t *gpu = json_array();
        for (size_t i = 0; i < w.n_gpus; i++)
            json_array_append_new(gpu,
                                  json_pack("{s:f, s:s}", "energy_j", w.gpu_energy_j[i], "source",
                                            bso_energy_source_name(w.gpu_source[i])));
        json_t *o = json_pack("{s:f, s:f, s:s, s:b, s:o, s:f, s:s}", "time_s", w.time_s, "energy_j",
                              w.total_energy_j, "source", bso_energy_source_name(w.source),
                              "estimated", w.estimated, "gpus", gpu, "cpu_energy_j", w.cpu_energy_j,
                              "cpu_source", bso_energy_source_name(w.cpu_source));
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fprintf(stderr, "%s\n", text);
        free(text);
        json_decref(o);
    } else {
        fprintf(stderr, "bso: %.3f s, %.1f J (%s)\n", w.time_s, w.total_energy_j,
                w.estimated ? "estimate: declared power x time" : bso_energy_source_name(w.source));
    }
    bso_monitor_free(m);
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    return 128 + (WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
}
