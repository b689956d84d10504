/*
 * LD_PRELOAD shim for benchmarks: makes fsync(2) and fdatasync(2) take at least
 * BSO_SLOW_FSYNC_US microseconds (default 3500), as on a slower disk than the one at hand,
 * so that group commit can be measured where fsync is cheap. Never used outside bench/.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The next definition of name (libc's), as a function (POSIX: through a data pointer). */
static int (*next_fn(const char *name))(int)
{
    void *p = dlsym(RTLD_NEXT, name);
    int (*f)(int);
    memcpy(&f, &p, sizeof f);
    return f;
}

static void pause_us(void)
{
    const char *v = getenv("BSO_SLOW_FSYNC_US");
    const long us = v ? atol(v) : 3500;
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

__attribute__((visibility("default"))) int fsync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = next_fn("fsync");
    pause_us();
    return real(fd);
}

__attribute__((visibility("default"))) int fdatasync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = next_fn("fdatasync");
    pause_us();
    return real(fd);
}
