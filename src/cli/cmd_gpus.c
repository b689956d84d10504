/* `bso gpus [--restore-power]`: the GPUs the monitor sees and where energy will come from. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/power.h"

static void say_line(void *ctx, const char *line)
{
    (void)ctx;
    printf("%s\n", line);
}

/* bso gpus --restore-power: the limits of processes that died holding them. */
static int restore_power(void)
{
    const int rc = bso_power_restore_recorded(say_line, NULL);
    if (rc < 0)
        return cli_die("power limits not restored: %s", bso_strerror(rc));
    if (rc == 0)
        printf("no power limit left behind to restore\n");
    return 0;
}

int cmd_gpus(struct ctx *c)
{
    if (c->argc == 1 && !strcmp(c->argv[0], "--restore-power"))
        return restore_power();
    if (c->argc > 0)
        return cli_die("gpus takes no argument but --restore-power, not '%s'", c->argv[0]), 2;
    bso_monitor *m;
    if (cli_open_monitor(&m))
        return 1;
    size_t n = bso_monitor_gpu_count(m);
    if (c->json) {
        json_t *gpus = json_array();
        for (size_t i = 0; i < n; i++) {
            struct bso_gpu_info g;
            bso_monitor_gpu(m, i, &g);
            json_array_append_new(gpus,
                                  json_pack("{s:i, s:s, s:s, s:f, s:f, s:s}", "index", g.index,
                                            "name", g.name, "uuid", g.uuid, "max_power_limit_w",
                                            g.max_power_limit_w, "power_limit_w", g.power_limit_w,
                                            "source", bso_energy_source_name(g.source)));
        }
        json_t *o = json_pack("{s:o, s:f, s:s, s:s}", "gpus", gpus, "max_power_w",
                              bso_monitor_max_power_w(m), "source",
                              bso_energy_source_name(bso_monitor_source(m)), "cpu_source",
                              bso_energy_source_name(bso_monitor_cpu_source(m)));
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(text);
        free(text);
        json_decref(o);
    } else {
        for (size_t i = 0; i < n; i++) {
            struct bso_gpu_info g;
            bso_monitor_gpu(m, i, &g);
            printf("GPU %d  %s  %s  max power %.0f W (limit now %.0f W)  energy from %s\n", g.index,
                   g.name, g.uuid, g.max_power_limit_w, g.power_limit_w,
                   bso_energy_source_name(g.source));
        }
        if (n == 0)
            printf("no NVIDIA GPU visible\n");
        printf("job max_power %.0f W; energy will come from %s; CPU energy from %s\n",
               bso_monitor_max_power_w(m), bso_energy_source_name(bso_monitor_source(m)),
               bso_energy_source_name(bso_monitor_cpu_source(m)));
    }
    bso_monitor_free(m);
    return 0;
}
