/* The energy monitor against the fake NVML (tests/fake_nvml.c) and a fake powercap tree: each
 * source, the labels, counter resets and wraps, lost GPUs, GPU selection, and the estimate. */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bso/monitor.h"

static char dir[64], script[128], powercap[128];

static void nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static int setup(void **state)
{
    (void)state;
    if (make_temp_dir(dir, sizeof dir, "bso-mon") < 0)
        return -1;
    snprintf(script, sizeof script, "%s/nvml.txt", dir);
    snprintf(powercap, sizeof powercap, "%s/powercap", dir);
    setenv("BSO_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("BSO_FAKE_NVML", script, 1);
    setenv("BSO_POWERCAP_ROOT", "/nonexistent", 1); /* no RAPL unless a test makes one */
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("BSO_ASSUMED_POWER_W");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return remove_temp_dir(dir);
}

static bso_monitor *open_monitor(const char *nvml_script)
{
    write_file(script, nvml_script);
    bso_monitor *m = NULL;
    char err[256];
    int rc = bso_monitor_new(NULL, &m, err, sizeof err);
    if (rc != 0)
        fail_msg("monitor: %s", err);
    return m;
}

/* Measures a window of about ms milliseconds. */
static struct bso_measurement window(bso_monitor *m, long ms)
{
    struct bso_measurement out;
    assert_int_equal(bso_monitor_begin(m, "w"), 0);
    nap_ms(ms);
    assert_int_equal(bso_monitor_end(m, "w", &out), 0);
    return out;
}

static void expect_near(double got, double want, double rel)
{
    if (!(got > want * (1 - rel) && got < want * (1 + rel)))
        fail_msg("%g is not within %.0f%% of %g", got, rel * 100, want);
}

static void test_energy_counter(void **state)
{
    (void)state;
    bso_monitor *m =
        open_monitor("gpu name=\"NVIDIA A100-SXM4-40GB\" max_mw=400500 power_mw=250000\n"
                     "gpu name=\"NVIDIA A100-SXM4-40GB\" max_mw=400500 power_mw=150000\n");
    assert_int_equal(bso_monitor_gpu_count(m), 2);
    struct bso_gpu_info g;
    assert_int_equal(bso_monitor_gpu(m, 0, &g), 0);
    assert_string_equal(g.name, "NVIDIA A100-SXM4-40GB");
    assert_int_equal(g.source, BSO_SOURCE_NVML_COUNTER);
    assert_true(bso_monitor_max_power_w(m) == 800); /* 400.5 W floored, times two */
    assert_int_equal(bso_monitor_source(m), BSO_SOURCE_NVML_COUNTER);
    struct bso_measurement w = window(m, 300);
    print_message("counter: %.3f s, %.1f J + %.1f J\n", w.time_s, w.gpu_energy_j[0],
                  w.gpu_energy_j[1]);
    expect_near(w.gpu_energy_j[0], 250 * w.time_s, 0.1);
    expect_near(w.gpu_energy_j[1], 150 * w.time_s, 0.1);
    assert_true(w.total_energy_j == w.gpu_energy_j[0] + w.gpu_energy_j[1]);
    assert_string_equal(bso_energy_source_name(w.source), "nvml-counter");
    assert_false(w.estimated);
    assert_int_equal(w.cpu_source, BSO_SOURCE_NONE);
    assert_true(isnan(w.utilization_pct)); /* the fake reports none unless told */
    bso_monitor_free(m);
}

/* Utilisation: the mean of the GPUs' busy shares over the window, sampled with the power, or
 * read once at the end of a window shorter than a sampling period; GPUs that do not report
 * it are left out. */
static void test_utilization(void **state)
{
    (void)state;
    bso_monitor *m = open_monitor("gpu util=30\ngpu util=70\ngpu util=unsupported\n");
    struct bso_measurement w = window(m, 200);
    assert_true(w.utilization_pct == 50);
    assert_int_equal(bso_monitor_begin(m, "short"), 0);
    assert_int_equal(bso_monitor_end(m, "short", &w), 0); /* no sample inside */
    assert_true(w.utilization_pct == 50);
    bso_monitor_free(m);
    m = open_monitor("gpu util=unsupported\n");
    w = window(m, 100);
    assert_true(isnan(w.utilization_pct));
    bso_monitor_free(m);
}

static void test_power_integration_when_counter_unsupported(void **state)
{
    (void)state;
    bso_monitor *m = open_monitor("gpu name=\"Tesla P100\" energy=unsupported power_mw=200000\n"
                                  "gpu name=\"Tesla V100\" power_mw=100000\n"
                                  "gpu name=\"Broken counter\" energy=error power_mw=50000\n");
    struct bso_gpu_info g;
    bso_monitor_gpu(m, 0, &g);
    assert_int_equal(g.source, BSO_SOURCE_NVML_POWER);
    /* The weakest GPU source labels the total. */
    assert_int_equal(bso_monitor_source(m), BSO_SOURCE_NVML_POWER);
    struct bso_measurement w = window(m, 400);
    print_message("power: %.3f s, %.1f J\n", w.time_s, w.gpu_energy_j[0]);
    expect_near(w.gpu_energy_j[0], 200 * w.time_s, 0.1);
    assert_int_equal(w.gpu_source[0], BSO_SOURCE_NVML_POWER);
    assert_int_equal(w.gpu_source[1], BSO_SOURCE_NVML_COUNTER);
    /* A counter that errors is treated like an unsupported one. */
    assert_int_equal(w.gpu_source[2], BSO_SOURCE_NVML_POWER);
    expect_near(w.gpu_energy_j[2], 50 * w.time_s, 0.1);
    bso_monitor_free(m);
}

static void test_counter_reset(void **state)
{
    (void)state;
    bso_monitor *m = open_monitor("gpu power_mw=300000 reset_ms=200\n");
    struct bso_measurement w = window(m, 500); /* the reset falls inside the window */
    print_message("reset: %.3f s, %.1f J\n", w.time_s, w.gpu_energy_j[0]);
    /* At most one sampling period (50 ms) is lost across the reset. */
    assert_true(w.gpu_energy_j[0] > 0);
    expect_near(w.gpu_energy_j[0], 300 * w.time_s, 0.15);
    bso_monitor_free(m);
}

static void test_lost_gpu(void **state)
{
    (void)state;
    bso_monitor *m = open_monitor("gpu power_mw=100000 lost_ms=150\n");
    assert_int_equal(bso_monitor_begin(m, "w"), 0);
    nap_ms(250);
    struct bso_measurement out;
    assert_int_equal(bso_monitor_end(m, "w", &out), BSO_EIO);
    assert_non_null(strstr(bso_monitor_errmsg(m), "GPU 0"));
    assert_non_null(strstr(bso_monitor_errmsg(m), "GPU is lost"));
    bso_monitor_free(m);
}

static void test_gpu_selection(void **state)
{
    (void)state;
    const char *three = "gpu uuid=GPU-aaaa\ngpu uuid=GPU-bbbb\ngpu uuid=GPU-cccc\n";
    write_file(script, three);
    bso_monitor *m;
    char err[256];
    struct bso_gpu_info g;
    setenv("CUDA_VISIBLE_DEVICES", "2,0", 1);
    assert_int_equal(bso_monitor_new(NULL, &m, err, sizeof err), 0);
    assert_int_equal(bso_monitor_gpu_count(m), 2);
    bso_monitor_gpu(m, 0, &g);
    assert_int_equal(g.index, 2);
    bso_monitor_free(m);
    setenv("CUDA_VISIBLE_DEVICES", "GPU-bb", 1);
    assert_int_equal(bso_monitor_new(NULL, &m, err, sizeof err), 0);
    bso_monitor_gpu(m, 0, &g);
    assert_string_equal(g.uuid, "GPU-bbbb");
    bso_monitor_free(m);
    setenv("CUDA_VISIBLE_DEVICES", "5", 1);
    assert_int_equal(bso_monitor_new(NULL, &m, err, sizeof err), BSO_EINVAL);
    assert_null(m);
    assert_non_null(strstr(err, "CUDA_VISIBLE_DEVICES"));
    /* Explicit indices win over the environment. */
    const int pick[1] = {1};
    struct bso_monitor_options opt;
    bso_monitor_options_init(&opt);
    opt.gpus = pick;
    opt.n_gpus = 1;
    assert_int_equal(bso_monitor_new(&opt, &m, err, sizeof err), 0);
    bso_monitor_gpu(m, 0, &g);
    assert_int_equal(g.index, 1);
    bso_monitor_free(m);
    /* -1 hides every GPU, as for CUDA; with nothing else to measure that is an error. */
    setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
    assert_int_equal(bso_monitor_new(NULL, &m, err, sizeof err), BSO_ENODEV);
    unsetenv("CUDA_VISIBLE_DEVICES");
}

static void test_estimate_only_when_nothing_measurable(void **state)
{
    (void)state;
    bso_monitor *m;
    char err[512];
    setenv("BSO_FAKE_NVML", "/nonexistent", 1); /* NVML present but the driver is not */
    assert_int_equal(bso_monitor_new(NULL, &m, err, sizeof err), BSO_ENODEV);
    assert_non_null(strstr(err, "BSO_ASSUMED_POWER_W"));
    setenv("BSO_ASSUMED_POWER_W", "abc", 1);
    assert_int_equal(bso_monitor_new(NULL, &m, err, sizeof err), BSO_EINVAL);
    setenv("BSO_ASSUMED_POWER_W", "120", 1);
    assert_int_equal(bso_monitor_new(NULL, &m, err, sizeof err), 0);
    assert_int_equal(bso_monitor_gpu_count(m), 0);
    assert_int_equal(bso_monitor_source(m), BSO_SOURCE_ESTIMATE);
    struct bso_measurement w = window(m, 100);
    assert_true(w.estimated);
    assert_string_equal(bso_energy_source_name(w.source), "estimate");
    assert_true(w.total_energy_j == 120 * w.time_s);
    bso_monitor_free(m);
    /* With a GPU present, the declared power is not used. */
    setenv("BSO_FAKE_NVML", script, 1);
    write_file(script, "gpu power_mw=50000\n");
    assert_int_equal(bso_monitor_new(NULL, &m, err, sizeof err), 0);
    w = window(m, 100);
    assert_false(w.estimated);
    bso_monitor_free(m);
    unsetenv("BSO_ASSUMED_POWER_W");
}

static void test_rapl(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "mkdir -p %s/intel-rapl:0/intel-rapl:0:0 %s/intel-rapl:0:0",
             powercap, powercap);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof path, "%s/intel-rapl:0/max_energy_range_uj", powercap);
    write_file(path, "10000000\n");
    snprintf(path, sizeof path, "%s/intel-rapl:0/energy_uj", powercap);
    write_file(path, "9000000\n");
    setenv("BSO_POWERCAP_ROOT", powercap, 1);
    setenv("BSO_FAKE_NVML", "/nonexistent", 1);
    bso_monitor *m;
    char err[256];
    assert_int_equal(bso_monitor_new(NULL, &m, err, sizeof err), 0);
    assert_int_equal(bso_monitor_cpu_source(m), BSO_SOURCE_RAPL);
    assert_int_equal(bso_monitor_source(m), BSO_SOURCE_RAPL); /* no GPU: the CPU is the job */
    assert_int_equal(bso_monitor_begin(m, "w"), 0);
    write_file(path, "9500000\n");
    nap_ms(120); /* the sampler sees 9.5 J, then the counter wraps past 10 J */
    write_file(path, "1500000\n");
    struct bso_measurement w;
    assert_int_equal(bso_monitor_end(m, "w", &w), 0);
    print_message("rapl: %.3f J\n", w.cpu_energy_j);
    assert_true(w.cpu_energy_j > 2.4999 && w.cpu_energy_j < 2.5001); /* 1 J + wrap + 1.5 J */
    assert_true(w.total_energy_j == w.cpu_energy_j);
    assert_false(w.estimated);
    bso_monitor_free(m);
    setenv("BSO_POWERCAP_ROOT", "/nonexistent", 1);
    setenv("BSO_FAKE_NVML", script, 1);
}

static void test_windows(void **state)
{
    (void)state;
    bso_monitor *m = open_monitor("gpu power_mw=100000\n");
    struct bso_measurement outer, inner;
    assert_int_equal(bso_monitor_begin(m, "epoch"), 0);
    assert_int_equal(bso_monitor_begin(m, "epoch"), BSO_ESTATE);
    assert_int_equal(bso_monitor_begin(m, "step"), 0);
    nap_ms(50);
    assert_int_equal(bso_monitor_end(m, "step", &inner), 0);
    nap_ms(50);
    assert_int_equal(bso_monitor_end(m, "epoch", &outer), 0);
    assert_true(outer.time_s > inner.time_s);
    assert_true(outer.gpu_energy_j[0] > inner.gpu_energy_j[0]);
    assert_int_equal(bso_monitor_end(m, "epoch", &outer), BSO_ENOTFOUND);
    char long_name[100];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[99] = '\0';
    assert_int_equal(bso_monitor_begin(m, long_name), BSO_EINVAL);
    bso_monitor_free(m);
    bso_monitor_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_counter),
        cmocka_unit_test(test_utilization),
        cmocka_unit_test(test_power_integration_when_counter_unsupported),
        cmocka_unit_test(test_counter_reset),
        cmocka_unit_test(test_lost_gpu),
        cmocka_unit_test(test_gpu_selection),
        cmocka_unit_test(test_estimate_only_when_nothing_measurable),
        cmocka_unit_test(test_rapl),
        cmocka_unit_test(test_windows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
