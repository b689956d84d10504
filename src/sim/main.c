/*
 * bso-sim: replays recurring training jobs from traces under a policy, and says what it costs
 * against the oracle and against always using the default batch size. See docs/policy.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/spec.h"
#include "sim/report.h"
#include "sim/sim.h"

static int usage(FILE *f)
{
    fprintf(f,
            "usage: bso-sim --gpu NAME[,NAME...] [--traces DIR] [--workload NAME|all]\n"
            "               [--workloads FILE] [--policy zeus,bso] [--power max,jit]\n"
            "               [--profile none,probe] [--probe-noise 0.05] [--probe-steps 4]\n"
            "               [--unfit-sizes skip|register] [--keep-jobs yes|no]\n"
            "               [--recurrences N] [--seeds A-B] [--eta 0.5] [--beta 2|none]\n"
            "               [--out DIR] [--server URL] [--decisions FILE|-]\n"
            "               [--change R:KIND=F[@SIZES][;...]]... [--launches K]\n"
            "               [--window N] [--declare-changes no|yes]\n"
            "               [--move fresh,transfer]\n"
            "\n"
            "Replays recurring training jobs from traces (shared/traces format) and reports the\n"
            "cumulative cost against the oracle and against the default batch size. Traces come\n"
            "from --traces, else BSO_TRACES, else ../shared/traces. With --server the decisions\n"
            "come from a live bso-server over HTTP instead of the in-process policy.\n"
            "Writes summary.csv, curves.csv and regret.svg to --out (default sim-out);\n"
            "--decisions writes every run (policy, recurrence, batch size, epochs run, outcome,\n"
            "cost, and the arm: policy/power+profile+move as in the tables) as CSV;\n"
            "tools/late-cost.py OUT DECISIONS counts from both the jobs still far from the\n"
            "oracle in their last recurrences, which a geometric mean hides, and\n"
            "tools/paired-cells.py OUT DECISIONS where one policy costs more than the other,\n"
            "cell by cell, beyond what the seeds' spread allows.\n"
            "--profile probe gives the policy a device profile derived from the traces before the\n"
            "first recurrence (samples/s and J/sample per batch size, each rate off by a\n"
            "log-normal --probe-noise), and charges the first recurrence --probe-steps training\n"
            "steps at every batch size for it; a job moved to another GPU (R:gpu=NAME) probes\n"
            "that GPU too, before recurrence R, which pays for it.\n"
            "--unfit-sizes register also lists the trained batch sizes beyond the largest the\n"
            "GPU's trace has: they do not fit, and a run at one dies of out-of-memory at once\n"
            "(no report, 60 s lost); a profile marks them infeasible.\n"
            "--keep-jobs yes leaves the replayed jobs on the --server (to look at them in its\n"
            "dashboard) instead of deleting them.\n"
            "--change makes the job change during its life: from recurrence R on, epochs to the\n"
            "target (epochs=F) or seconds per epoch (time=F) are multiplied by F at the sizes\n"
            "picked by @SIZES relative to the optimum before the change: <opt, <=opt, opt,\n"
            ">=opt, >opt, a range A-B of batch sizes, or all (the default). E.g. --change\n"
            "'20:epochs=1.6@<=opt' --change 40:time=1.5. Then a table per phase says the cost\n"
            "against that phase's oracle, the recurrences whose first --launches K runs (default\n"
            "5) trained no model, runs stopped per recurrence, and the lag until sizes within 5%%\n"
            "of the phase's oracle trained 3 recurrences in a row, and the changes the policy\n"
            "found in the phase (also changes.csv). The summary line sets the recurrences\n"
            "without a model beside those any policy would leave (no_model_floor: K runs at the\n"
            "size likeliest to reach, each reaching as often as its paths do) and says how many\n"
            "the policy refused a batch size (a 409: the recurrence ends there, at no cost, and\n"
            "the next asks again; changes.csv's refused). Without --change, each bso arm's line\n"
            "\"changes found\" counts its false alarms.\n"
            "R:gpu=NAME moves the job to another GPU's trace from recurrence R: a new job, as a\n"
            "Zeus client registers one, which --move fresh starts from nothing and --move\n"
            "transfer from the old job's epochs (POST /jobs/ID/transfer); default: both.\n"
            "--window N registers the jobs with window_size N (default 0: no window; under the\n"
            "zeus policy at least 2, its mab_num_explorations).\n"
            "--declare-changes yes tells the bso policy of each --change as it happens (the\n"
            "user's POST /jobs/ID/changed); a move to another GPU is a new job instead.\n");
    return f == stdout ? 0 : 2;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bso-sim: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static bool parse_num(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return *s && *end == '\0' && isfinite(*v);
}

int main(int argc, char **argv)
{
    /* Static, not on the stack: its jobs hold every trace they replay (tens of MB at the
     * traces' limits, SIM_MAX_BS sizes of SIM_MAX_PATHS runs); zero until a job is loaded. */
    static struct sim_plan plan;
    const char *traces = getenv("BSO_TRACES");
    if (!traces || !*traces)
        traces = "../shared/traces";
    const char *gpus = NULL, *workload = "all", *workloads_file = NULL;
    const char *out_dir = "sim-out";
    const char *policies = "zeus", *powers = "max", *profiles = "none", *decisions = NULL;
    const char *moves = "fresh,transfer";
    bool move_given = false;
    plan.opt.eta = 0.5;
    plan.opt.beta = 2.0;
    plan.opt.recurrences = 50;
    plan.opt.probe = (struct sim_probe_options){.steps = 4, .noise = 0.05};
    int64_t seed_a = 1, seed_b = 20;
    static struct sim_changes changes;
    plan.opt.changes = &changes;
    plan.opt.launches = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return usage(stdout);
        if (i + 1 >= argc)
            return fail("%s needs a value (see --help)", a), 2;
        const char *v = argv[++i];
        double d;
        if (strcmp(a, "--traces") == 0) {
            traces = v;
        } else if (strcmp(a, "--gpu") == 0) {
            gpus = v;
        } else if (strcmp(a, "--workload") == 0) {
            workload = v;
        } else if (strcmp(a, "--workloads") == 0) {
            workloads_file = v;
        } else if (strcmp(a, "--policy") == 0) {
            policies = v;
        } else if (strcmp(a, "--power") == 0) {
            powers = v;
        } else if (strcmp(a, "--profile") == 0) {
            profiles = v;
        } else if (strcmp(a, "--probe-noise") == 0) {
            if (!parse_num(v, &d) || d < 0 || d > 2)
                return fail("--probe-noise must be in [0, 2] (0: exact)"), 2;
            plan.opt.probe.noise = d;
        } else if (strcmp(a, "--probe-steps") == 0) {
            if (!parse_num(v, &d) || d < 1 || d > 1e6 || d != floor(d))
                return fail("--probe-steps must be a whole number from 1 to 1000000"), 2;
            plan.opt.probe.steps = (int64_t)d;
        } else if (strcmp(a, "--keep-jobs") == 0) {
            if (strcmp(v, "yes") && strcmp(v, "no"))
                return fail("--keep-jobs takes yes or no, not '%s'", v), 2;
            plan.opt.keep_jobs = strcmp(v, "yes") == 0;
        } else if (strcmp(a, "--unfit-sizes") == 0) {
            if (strcmp(v, "skip") && strcmp(v, "register"))
                return fail("--unfit-sizes takes skip or register, not '%s'", v), 2;
            plan.opt.unfit_sizes = strcmp(v, "register") == 0;
        } else if (strcmp(a, "--recurrences") == 0) {
            if (!parse_num(v, &d) || d < 1 || d > 1e6 || d != floor(d))
                return fail("--recurrences must be a whole number from 1 to 1000000"), 2;
            plan.opt.recurrences = (int64_t)d;
        } else if (strcmp(a, "--seeds") == 0) {
            long long x, y;
            char extra;
            int n = sscanf(v, "%lld-%lld%c", &x, &y, &extra);
            if (n == 1 && sscanf(v, "%lld%c", &x, &extra) == 1)
                y = x;
            else if (n != 2)
                return fail("--seeds must be A-B or A, not '%s'", v), 2;
            if (x < 0 || y < x || y - x > 100000)
                return fail("--seeds must be A-B with 0 <= A <= B"), 2;
            seed_a = x;
            seed_b = y;
        } else if (strcmp(a, "--eta") == 0) {
            if (!parse_num(v, &d) || d < 0 || d > 1)
                return fail("--eta must be in [0, 1]"), 2;
            plan.opt.eta = d;
        } else if (strcmp(a, "--beta") == 0) {
            if (strcmp(v, "none") == 0)
                plan.opt.beta = 0;
            else if (!parse_num(v, &d) || d <= 0)
                return fail("--beta must be positive or none"), 2;
            else
                plan.opt.beta = d;
        } else if (strcmp(a, "--out") == 0) {
            out_dir = v;
        } else if (strcmp(a, "--server") == 0) {
            plan.opt.server = v;
        } else if (strcmp(a, "--change") == 0) {
            char why[256];
            if (sim_change_parse(v, &changes, why, sizeof why) < 0)
                return fail("%s", why), 2;
        } else if (strcmp(a, "--move") == 0) {
            moves = v;
            move_given = true;
        } else if (strcmp(a, "--launches") == 0) {
            if (!parse_num(v, &d) || d < 1 || d > 1000 || d != floor(d))
                return fail("--launches must be a whole number from 1 to 1000"), 2;
            plan.opt.launches = (int64_t)d;
        } else if (strcmp(a, "--window") == 0) {
            if (!parse_num(v, &d) || d < 0 || d > 1e6 || d != floor(d))
                return fail("--window must be a whole number from 0 (no window) to 1000000"), 2;
            plan.opt.window = (int64_t)d;
        } else if (strcmp(a, "--declare-changes") == 0) {
            if (strcmp(v, "yes") && strcmp(v, "no"))
                return fail("--declare-changes takes yes or no, not '%s'", v), 2;
            plan.opt.declare = strcmp(v, "yes") == 0;
        } else if (strcmp(a, "--decisions") == 0) {
            decisions = v;
        } else {
            return fail("unknown option '%s' (see --help)", a), 2;
        }
    }
    if (!gpus)
        return fail("--gpu is required, e.g. --gpu v100,a40 (see --help)"), 2;
    /* Every (policy, power, profile) combination asked for, e.g. --policy zeus,bso --power
     * max,jit --profile none,probe. */
    char list_p[64], list_w[64], list_f[64];
    /* A move to another GPU is replayed both ways (--move), other changes once. A change after
     * the last recurrence would never happen: the replay would look like one without it. */
    bool any_move = false;
    for (size_t i = 0; i < changes.n; i++) {
        any_move |= changes.items[i].kind == SIM_CHANGE_GPU;
        if (changes.items[i].recurrence > plan.opt.recurrences)
            return fail("--change at recurrence %lld comes after the last one replayed "
                        "(--recurrences %lld)",
                        (long long)changes.items[i].recurrence, (long long)plan.opt.recurrences),
                   2;
    }
    if (move_given && !any_move)
        return fail("--move applies to a move to another GPU: add --change R:gpu=NAME"), 2;
    snprintf(list_p, sizeof list_p, "%s", policies);
    char *sp = NULL, *sw = NULL, *sf = NULL;
    bool any_profile = false;
    for (char *pol = strtok_r(list_p, ",", &sp); pol; pol = strtok_r(NULL, ",", &sp)) {
        int id = bso_policy_parse(pol);
        if (id < 0)
            return fail("--policy takes zeus and bso, not '%s'", pol), 2;
        snprintf(list_w, sizeof list_w, "%s", powers);
        for (char *pw = strtok_r(list_w, ",", &sw); pw; pw = strtok_r(NULL, ",", &sw)) {
            if (strcmp(pw, "max") && strcmp(pw, "jit"))
                return fail("--power takes max and jit, not '%s'", pw), 2;
            snprintf(list_f, sizeof list_f, "%s", profiles);
            for (char *pf = strtok_r(list_f, ",", &sf); pf; pf = strtok_r(NULL, ",", &sf)) {
                if (strcmp(pf, "none") && strcmp(pf, "probe"))
                    return fail("--profile takes none and probe, not '%s'", pf), 2;
                char list_m[64];
                snprintf(list_m, sizeof list_m, "%s", any_move ? moves : "-");
                char *sm = NULL;
                for (char *mv = strtok_r(list_m, ",", &sm); mv; mv = strtok_r(NULL, ",", &sm)) {
                    const int move = !strcmp(mv, "fresh") ? 1 : !strcmp(mv, "transfer") ? 2 : 0;
                    if (any_move && move == 0)
                        return fail("--move takes fresh and transfer, not '%s'", mv), 2;
                    if (plan.n_arms == SIM_MAX_ARMS)
                        return fail("at most %d policy x power x profile x move combinations",
                                    SIM_MAX_ARMS),
                               2;
                    plan.arms[plan.n_arms++] = (struct sim_arm){.policy = id,
                                                                .jit = strcmp(pw, "jit") == 0,
                                                                .profile = !strcmp(pf, "probe"),
                                                                .move = move};
                }
                any_profile |= strcmp(pf, "probe") == 0;
            }
        }
    }

    struct sim_workload ws[SIM_MAX_JOBS];
    size_t n_ws;
    char err[512];
    if (workloads_file) {
        int n = sim_read_workloads(workloads_file, ws, SIM_MAX_JOBS, err, sizeof err);
        if (n < 0)
            return fail("%s", err);
        n_ws = (size_t)n;
    } else {
        const struct sim_workload *b = sim_builtin_workloads(&n_ws);
        memcpy(ws, b, n_ws * sizeof *b);
    }
    size_t picked = 0;
    for (size_t i = 0; i < n_ws; i++)
        if (strcmp(workload, "all") == 0 || strcmp(workload, ws[i].dataset) == 0)
            ws[picked++] = ws[i];
    if (picked == 0)
        return fail("no workload named '%s' (known: all, or a dataset of the table)", workload), 2;
    for (size_t i = 0; i < picked && any_profile; i++)
        if (ws[i].samples_per_epoch <= 0)
            return fail("--profile probe needs workload %s's samples_per_epoch (a column of "
                        "--workloads) to charge the probe's cost",
                        ws[i].dataset),
                   2;

    plan.opt.traces = traces;
    plan.seed_first = seed_a;
    plan.seed_last = seed_b;
    char gpu_list[256];
    snprintf(gpu_list, sizeof gpu_list, "%s", gpus);
    char *save = NULL;
    for (char *g = strtok_r(gpu_list, ",", &save); g; g = strtok_r(NULL, ",", &save))
        for (size_t i = 0; i < picked; i++) {
            if (plan.n_jobs == SIM_MAX_JOBS)
                return fail("more than %d workload x GPU pairs", SIM_MAX_JOBS);
            if (sim_load(traces, g, &ws[i], &plan.jobs[plan.n_jobs], err, sizeof err) < 0)
                return fail("%s", err);
            plan.n_jobs++;
        }
    /* Only once the traces load (a run that fails on its input leaves nothing behind), but
     * before the replay, so that an output folder that cannot be made fails at once. */
    if (mkdir(out_dir, 0777) < 0 && errno != EEXIST)
        return fail("cannot create %s: %s", out_dir, strerror(errno));
    if (decisions) {
        plan.opt.trace = strcmp(decisions, "-") == 0 ? stdout : fopen(decisions, "w");
        if (!plan.opt.trace)
            return fail("cannot write %s: %s", decisions, strerror(errno));
        fprintf(plan.opt.trace,
                "workload,gpu,seed,trial,batch_size,target_epoch,outcome,cost,policy,recurrence,"
                "epochs_run,arm\n");
    }
    int rc = sim_plan_run(&plan, err, sizeof err);
    if (plan.opt.trace && plan.opt.trace != stdout)
        fclose(plan.opt.trace);
    if (rc < 0)
        return fail("%s", err);
    sim_print_table(&plan, stdout);
    if (sim_plan_changes(&plan))
        sim_print_changes(&plan, stdout);
    if (sim_write_outputs(&plan, out_dir, err, sizeof err) < 0)
        return fail("%s", err);
    sim_plan_free(&plan);
    return 0;
}
