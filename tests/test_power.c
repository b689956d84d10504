/* Power-limit tuning against the fake NVML (tests/fake_nvml.c), whose GPU follows a scripted
 * power and step-time curve per limit: the shared choice, profiling to the right limit, the
 * fallback without permission, a known limit applied, and the original limit put back when
 * the tuner is freed, at exit, on SIGTERM, and by the record after a SIGKILL. The scenarios
 * that end a process run in a child, so the test itself never holds a limit. */
#include "helpers.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dlfcn.h>

#include "bso/power.h"

static char dir[64], script[128], state_file[128], record[128];

/* Power and step time per limit; the cost per sample (eta 0.5, max_power 300) is least at
 * 200 W by 5%: 300 W 15680, 250 W 15225, 200 W 14400, 150 W 17600, 100 W 29625 (x 1e-3). */
#define CURVE "curve=100:95:150,150:140:80,200:180:60,250:225:58,300:260:56"

/* The fake driver's limit of GPU index, in W, as kept in its state file (-1: never set). */
static double kept_limit_w(unsigned index)
{
    FILE *f = fopen(state_file, "r");
    if (!f)
        return -1;
    unsigned i, mw;
    double w = -1;
    while (fscanf(f, "%u %u", &i, &mw) == 2)
        if (i == index)
            w = mw / 1000.0;
    fclose(f);
    return w;
}

/* Lines in the record file. */
static int record_lines(void)
{
    FILE *f = fopen(record, "r");
    if (!f)
        return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static int setup(void **state)
{
    (void)state;
    if (make_temp_dir(dir, sizeof dir, "bso-power") < 0)
        return -1;
    snprintf(script, sizeof script, "%s/nvml.txt", dir);
    snprintf(state_file, sizeof state_file, "%s/limits", dir);
    snprintf(record, sizeof record, "%s/record", dir);
    setenv("BSO_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("BSO_FAKE_NVML", script, 1);
    setenv("BSO_FAKE_NVML_STATE", state_file, 1);
    setenv("BSO_POWER_RECORD", record, 1);
    setenv("BSO_POWERCAP_ROOT", "/nonexistent", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("BSO_ASSUMED_POWER_W");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return remove_temp_dir(dir);
}

static int fresh(void **state)
{
    (void)state;
    unlink(state_file);
    unlink(record);
    return 0;
}

static bso_monitor *open_monitor(const char *nvml_script)
{
    write_file(script, nvml_script);
    bso_monitor *m = NULL;
    char err[256];
    if (bso_monitor_new(NULL, &m, err, sizeof err) != 0)
        fail_msg("monitor: %s", err);
    return m;
}

static bso_power_tuner *open_tuner(bso_monitor *m)
{
    struct bso_power_options opt;
    bso_power_options_init(&opt);
    opt.eta = 0.5;
    opt.warmup_s = 0.03;
    opt.window_s = 0.12;
    opt.min_steps = 3;
    bso_power_tuner *t = NULL;
    char err[256];
    if (bso_power_tuner_new(m, &opt, &t, err, sizeof err) != 0)
        fail_msg("tuner: %s", err);
    return t;
}

static void nap_s(double s)
{
    struct timespec t = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&t, NULL);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A training loop on the fake GPU: each step sleeps 10 ms and reports the work the scripted
 * step time makes of the time that really passed, so throughput is exact despite a loaded
 * machine. Runs until the tuner leaves profiling. */
static int train(bso_power_tuner *t)
{
    void *fake = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_NOLOAD);
    double (*step_s)(unsigned) = NULL;
    void *sym = fake ? dlsym(fake, "bso_fake_nvml_step_s") : NULL;
    memcpy(&step_s, &sym, sizeof sym);
    if (!step_s)
        return -100;
    int rc = bso_power_tuner_state(t);
    double last = now_s();
    for (int i = 0; i < 100000 && rc == BSO_POWER_PROFILING; i++) {
        nap_s(0.01);
        const double now = now_s();
        rc = bso_power_tuner_step(t, 64.0 * (now - last) / step_s(0));
        last = now;
    }
    dlclose(fake);
    return rc;
}

static void test_choice(void **state)
{
    (void)state;
    struct bso_power_point p[] = {
        {300, 1000, 260}, {250, 980, 225}, {200, 930, 180}, {150, 700, 140}, {100, 380, 95}};
    size_t best = 99;
    /* eta 0.5: (0.5 P + 150) / rate: 0.280, 0.2679, 0.2581, 0.3143, 0.5197 */
    assert_int_equal(bso_power_choose(p, 5, 0.5, 300, &best), 0);
    assert_int_equal(best, 2);
    /* eta 0: time only: the fastest */
    assert_int_equal(bso_power_choose(p, 5, 0.0, 300, &best), 0);
    assert_int_equal(best, 0);
    /* eta 1: energy only: J per sample 0.26, 0.2296, 0.1935, 0.2, 0.25 */
    assert_int_equal(bso_power_choose(p, 5, 1.0, 300, &best), 0);
    assert_int_equal(best, 2);
    /* Equal costs: the higher limit, wherever it comes in the list. */
    struct bso_power_point tie[] = {{150, 100, 100}, {250, 100, 100}, {200, 100, 100}};
    assert_int_equal(bso_power_choose(tie, 3, 0.5, 300, &best), 0);
    assert_int_equal(best, 1);
    /* A point without throughput never wins; nothing measurable is an error. */
    struct bso_power_point none[] = {{300, 0, 250}, {200, NAN, 150}};
    assert_true(isinf(bso_power_cost_per_sample(&none[0], 0.5, 300)));
    assert_int_equal(bso_power_choose(none, 2, 0.5, 300, &best), BSO_EINVAL);
    assert_int_equal(bso_power_choose(p, 0, 0.5, 300, &best), BSO_EINVAL);
    assert_int_equal(bso_power_choose(p, 5, 1.5, 300, &best), BSO_EINVAL);
    assert_int_equal(bso_power_choose(p, 5, 0.5, 0, &best), BSO_EINVAL);
}

/* Five limits from the top of the range down, each measured close to the script, the
 * cheapest set for the rest of the run, and the original back when the tuner goes. */
static void test_profiles_and_chooses(void **state)
{
    (void)state;
    bso_monitor *m = open_monitor("gpu max_mw=300000 min_mw=100000 limit_mw=280000 " CURVE "\n");
    bso_power_tuner *t = open_tuner(m);
    double limits[BSO_POWER_MAX_LIMITS];
    assert_int_equal(bso_power_tuner_limits(t, limits, BSO_POWER_MAX_LIMITS), 5);
    const double want[] = {300, 250, 200, 150, 100};
    for (size_t i = 0; i < 5; i++)
        assert_true(limits[i] == want[i]);
    struct bso_power_result r;
    assert_int_equal(bso_power_tuner_result(t, &r), BSO_ESTATE);
    assert_int_equal(bso_power_tuner_start(t), BSO_POWER_PROFILING);
    assert_true(kept_limit_w(0) == 300);
    assert_int_equal(record_lines(), 1);
    assert_int_equal(train(t), BSO_POWER_DONE);
    assert_int_equal(bso_power_tuner_result(t, &r), 0);
    assert_int_equal(r.n, 5);
    const double power[] = {260, 225, 180, 140, 95}, step_ms[] = {56, 58, 60, 80, 150};
    for (size_t i = 0; i < 5; i++) {
        print_message("%3.0f W: %7.1f samples/s at %6.1f W\n", r.points[i].limit_w,
                      r.points[i].samples_per_s, r.points[i].power_w);
        assert_true(r.points[i].limit_w == want[i]);
        assert_true(fabs(r.points[i].power_w - power[i]) < 0.05 * power[i]);
        const double rate = 64 / (step_ms[i] / 1000);
        assert_true(fabs(r.points[i].samples_per_s - rate) < 0.05 * rate);
    }
    size_t again;
    assert_int_equal(bso_power_choose(r.points, r.n, 0.5, 300, &again), 0);
    assert_int_equal(r.chosen, again);
    assert_true(r.limit_w == 200);
    assert_true(r.max_power_w == 300);
    assert_true(kept_limit_w(0) == 200);
    assert_int_equal(bso_power_tuner_step(t, 64), BSO_POWER_DONE); /* nothing more happens */
    assert_int_equal(bso_power_tuner_step(t, -1), BSO_EINVAL);
    assert_int_equal(bso_power_tuner_start(t), BSO_ESTATE);
    bso_power_tuner_free(t);
    assert_true(kept_limit_w(0) == 280);
    assert_int_equal(record_lines(), 0);
    bso_monitor_free(m);
}

/* The run ends before every limit is measured: finish() chooses among those measured (two or
 * more), or puts the original limit back (fewer). */
static void test_finish_early(void **state)
{
    (void)state;
    bso_monitor *m = open_monitor("gpu max_mw=300000 min_mw=100000 limit_mw=280000 " CURVE "\n");
    bso_power_tuner *t = open_tuner(m);
    assert_int_equal(bso_power_tuner_start(t), BSO_POWER_PROFILING);
    assert_int_equal(bso_power_tuner_finish(t), BSO_POWER_OFF); /* nothing measured yet */
    assert_non_null(strstr(bso_power_tuner_errmsg(t), "too few to choose"));
    assert_true(kept_limit_w(0) == 280);
    bso_power_tuner_free(t);

    t = open_tuner(m);
    assert_int_equal(bso_power_tuner_start(t), BSO_POWER_PROFILING);
    /* Steps for about 3.3 limits' worth (warm-up 0.03 s + window 0.12 s each), by the clock:
     * two are measured with 0.2 s to spare for a loaded machine's stalls (at 2.3 limits' worth,
     * 0.05 s, it failed once under ctest -j6 on two cores), and five would take 0.75 s. */
    int rc = BSO_POWER_PROFILING;
    const double t0 = now_s();
    while (now_s() - t0 < 0.5 && rc == BSO_POWER_PROFILING) {
        nap_s(0.01);
        rc = bso_power_tuner_step(t, 64);
    }
    assert_int_equal(rc, BSO_POWER_PROFILING);
    assert_int_equal(bso_power_tuner_finish(t), BSO_POWER_DONE);
    struct bso_power_result r;
    assert_int_equal(bso_power_tuner_result(t, &r), 0);
    assert_true(r.n >= 2 && r.n < 5);
    assert_true(r.points[0].limit_w == 300 && r.points[1].limit_w == 250);
    assert_true(kept_limit_w(0) == r.limit_w);
    assert_int_equal(bso_power_tuner_finish(t), BSO_POWER_DONE); /* again: nothing changes */
    bso_power_tuner_free(t);
    assert_true(kept_limit_w(0) == 280);
    bso_monitor_free(m);
}

/* Without permission (or support) nothing changes and the tuner says why. */
static void test_without_permission(void **state)
{
    (void)state;
    const char *cases[] = {"setlimit=denied", "setlimit=unsupported"};
    const char *says[] = {"CAP_SYS_ADMIN", "cannot have its power limit set"};
    for (size_t c = 0; c < 2; c++) {
        char text[256];
        snprintf(text, sizeof text, "gpu limit_mw=250000 %s " CURVE "\n", cases[c]);
        bso_monitor *m = open_monitor(text);
        bso_power_tuner *t = open_tuner(m);
        assert_int_equal(bso_power_tuner_start(t), BSO_POWER_OFF);
        assert_int_equal(bso_power_tuner_state(t), BSO_POWER_OFF);
        print_message("%s\n", bso_power_tuner_errmsg(t));
        assert_non_null(strstr(bso_power_tuner_errmsg(t), says[c]));
        assert_non_null(strstr(bso_power_tuner_errmsg(t), "batch size only"));
        assert_int_equal(bso_power_tuner_step(t, 64), BSO_POWER_OFF);
        assert_true(kept_limit_w(0) == -1); /* never set */
        assert_int_equal(record_lines(), 0);
        bso_power_tuner_free(t);
        bso_monitor_free(m);
    }
}

/* A limit known from an earlier run is set without profiling; one outside the range is
 * refused; a monitor without an NVML-measured GPU gets no tuner. */
static void test_apply_known_limit(void **state)
{
    (void)state;
    bso_monitor *m = open_monitor("gpu limit_mw=250000 " CURVE "\ngpu limit_mw=250000 " CURVE);
    bso_power_tuner *t = open_tuner(m);
    assert_int_equal(bso_power_tuner_apply(t, 50), BSO_EINVAL);
    assert_int_equal(bso_power_tuner_state(t), BSO_POWER_IDLE);
    assert_int_equal(bso_power_tuner_apply(t, 175), BSO_POWER_DONE);
    assert_true(kept_limit_w(0) == 175 && kept_limit_w(1) == 175);
    assert_int_equal(record_lines(), 2);
    struct bso_power_result r;
    assert_int_equal(bso_power_tuner_result(t, &r), BSO_ESTATE); /* nothing was measured */
    bso_power_tuner_free(t);
    assert_true(kept_limit_w(0) == 250 && kept_limit_w(1) == 250);
    bso_monitor_free(m);

    bso_power_tuner *none = NULL;
    char err[256];
    setenv("BSO_ASSUMED_POWER_W", "100", 1);
    m = open_monitor("gpu energy=unsupported power=unsupported\n");
    assert_int_equal(bso_power_tuner_new(m, NULL, &none, err, sizeof err), BSO_ENODEV);
    assert_null(none);
    assert_non_null(strstr(err, "no GPU"));
    unsetenv("BSO_ASSUMED_POWER_W");
    bso_monitor_free(m);
}

/* In a forked child: starts profiling the fake GPU (the limit goes to the top of the range
 * first), leaving monitor and tuner unfreed for the child's ending to deal with; exits 3 when
 * it cannot. */
static void child_starts_profiling(void)
{
    static bso_monitor *m; /* static: still reachable at the child's exit, not a leak */
    static bso_power_tuner *t;
    char err[256];
    if (bso_monitor_new(NULL, &m, err, sizeof err) != 0 ||
        bso_power_tuner_new(m, NULL, &t, err, sizeof err) != 0 ||
        bso_power_tuner_start(t) != BSO_POWER_PROFILING)
        _exit(3);
}

/* How a child that holds a limit ends. */
enum ending { END_EXIT, END_SIGTERM, END_SIGKILL };

/* Forks a child that starts profiling (the limit drops to 300 W from 280 W: the top of the
 * range first), tells the parent, then ends as asked; returns its wait status. */
static int child_status(enum ending how)
{
    write_file(script, "gpu max_mw=300000 limit_mw=280000 " CURVE "\n");
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        close(go[1]);
        child_starts_profiling();
        if (write(ready[1], "x", 1) != 1)
            _exit(4);
        char unused;
        if (how == END_EXIT && read(go[0], &unused, 1) == 1)
            exit(0); /* neither freed: the exit hook restores */
        for (;;)
            pause();
    }
    close(ready[1]);
    close(go[0]);
    char c = 'x';
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    assert_true(kept_limit_w(0) == 300);
    if (how == END_EXIT)
        assert_int_equal(write(go[1], &c, 1), 1);
    else
        kill(pid, how == END_SIGTERM ? SIGTERM : SIGKILL);
    close(go[1]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* A child forked while the limit is held (a data loader's worker) ends, normally and by
 * SIGTERM: the limit stays for the process still training, which restores it when it ends. */
static void test_forked_child_leaves_the_limit(void **state)
{
    (void)state;
    write_file(script, "gpu max_mw=300000 limit_mw=280000 " CURVE "\n");
    const pid_t holder = fork();
    assert_true(holder >= 0);
    if (holder == 0) {
        child_starts_profiling();
        for (int how = 0; how < 2; how++) {
            const pid_t worker = fork();
            if (worker == 0) {
                if (how == 0)
                    exit(0);
                for (;;)
                    pause();
            }
            if (how == 1)
                kill(worker, SIGTERM);
            int st;
            if (waitpid(worker, &st, 0) != worker || kept_limit_w(0) != 300)
                _exit(10 + how);
        }
        exit(0); /* the holder's own exit restores */
    }
    int status;
    assert_int_equal(waitpid(holder, &status, 0), holder);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_true(kept_limit_w(0) == 280);
}

static void test_restore_at_exit(void **state)
{
    (void)state;
    const int status = child_status(END_EXIT);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(kept_limit_w(0) == 280);
    assert_int_equal(record_lines(), 0);
}

/* SIGTERM: the handler restores, then the signal kills the process as it would have. */
static void test_restore_on_sigterm(void **state)
{
    (void)state;
    const int status = child_status(END_SIGTERM);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    assert_true(kept_limit_w(0) == 280);
}

static void collect(void *ctx, const char *line)
{
    print_message("  %s\n", line);
    strncat((char *)ctx, line, 1023 - strlen((char *)ctx));
}

/* SIGKILL cannot be caught: the limit stays, and the record restores it afterwards. */
static void test_restore_recorded_after_sigkill(void **state)
{
    (void)state;
    const int status = child_status(END_SIGKILL);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_true(kept_limit_w(0) == 300);
    assert_int_equal(record_lines(), 1);
    char said[1024] = "";
    assert_int_equal(bso_power_restore_recorded(collect, said), 1);
    assert_non_null(strstr(said, "back to 280 W"));
    assert_true(kept_limit_w(0) == 280);
    assert_int_equal(record_lines(), 0);
    /* Nothing recorded: nothing to do. */
    said[0] = '\0';
    assert_int_equal(bso_power_restore_recorded(collect, said), 0);
    assert_string_equal(said, "");
}

/* Two killed processes in a row: the second recorded the first's leftover as its original,
 * so the records are undone newest first and the GPU ends at the true original. A record of
 * a live process is left alone. */
static void test_restore_recorded_order(void **state)
{
    (void)state;
    write_file(script, "gpu uuid=GPU-a limit_mw=200000\n");
    write_file(state_file, "0 150000\n");
    char text[256];
    snprintf(text, sizeof text,
             "GPU-a 0 280000 999999990\nGPU-a 0 175000 999999991\n"
             "GPU-a 0 123000 %ld\n",
             (long)getppid());
    write_file(record, text);
    char said[1024] = "";
    assert_int_equal(bso_power_restore_recorded(collect, said), 2);
    assert_true(kept_limit_w(0) == 280);
    assert_non_null(strstr(said, "still running"));
    assert_int_equal(record_lines(), 1);
}

/* A long record (many runs still going) is kept whole: none of its lines is lost. */
static void test_restore_recorded_keeps_a_long_record(void **state)
{
    (void)state;
    write_file(script, "gpu uuid=GPU-a limit_mw=200000\n");
    FILE *f = fopen(record, "w");
    assert_non_null(f);
    for (int i = 0; i < 1500; i++)
        fprintf(f, "GPU-a 0 %d %ld\n", 100000 + i, (long)getppid());
    fclose(f);
    char said[1024] = "";
    assert_int_equal(bso_power_restore_recorded(collect, said), 0);
    assert_int_equal(record_lines(), 1500);
}

/* Without permission the record stays for a later try, and the command says why. */
static void test_restore_recorded_without_permission(void **state)
{
    (void)state;
    write_file(script, "gpu uuid=GPU-a limit_mw=200000 setlimit=denied\n");
    write_file(record, "GPU-a 0 280000 999999990\n");
    char said[1024] = "";
    assert_int_equal(bso_power_restore_recorded(collect, said), BSO_ENODEV);
    assert_non_null(strstr(said, "CAP_SYS_ADMIN"));
    assert_int_equal(record_lines(), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choice),
        cmocka_unit_test_setup(test_profiles_and_chooses, fresh),
        cmocka_unit_test_setup(test_finish_early, fresh),
        cmocka_unit_test_setup(test_without_permission, fresh),
        cmocka_unit_test_setup(test_apply_known_limit, fresh),
        cmocka_unit_test_setup(test_restore_at_exit, fresh),
        cmocka_unit_test_setup(test_restore_on_sigterm, fresh),
        cmocka_unit_test_setup(test_forked_child_leaves_the_limit, fresh),
        cmocka_unit_test_setup(test_restore_recorded_after_sigkill, fresh),
        cmocka_unit_test_setup(test_restore_recorded_order, fresh),
        cmocka_unit_test_setup(test_restore_recorded_keeps_a_long_record, fresh),
        cmocka_unit_test_setup(test_restore_recorded_without_permission, fresh),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
