/*
 * LD_PRELOAD shim for tests: while the file named by BSO_FAIL_FSYNC_FLAG exists, fsync(2) and
 * fdatasync(2) fail with EIO, as a dying disk would. Lets the tests check that a commit that
 * cannot reach the disk fails its requests cleanly and leaves nothing half-written.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failing(void)
{
    const char *flag = getenv("BSO_FAIL_FSYNC_FLAG");
    return flag && access(flag, F_OK) == 0;
}

/* The next definition of name (libc's), as a function (POSIX: through a data pointer). */
static int (*next_fn(const char *name))(int)
{
    void *p = dlsym(RTLD_NEXT, name);
    int (*f)(int);
    memcpy(&f, &p, sizeof f);
    return f;
}

__attribute__((visibility("default"))) int fsync(int fd)
{
    if (failing()) {
        errno = EIO;
        return -1;
    }
    return next_fn("fsync")(fd);
}

__attribute__((visibility("default"))) int fdatasync(int fd)
{
    if (failing()) {
        errno = EIO;
        return -1;
    }
    return next_fn("fdatasync")(fd);
}
