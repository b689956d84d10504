/* Linux implementations of os.h. */
#include "os/os.h"

#include <errno.h>
#include <sys/random.h>
#include <time.h>

#include "bso/error.h"

int bso_os_entropy(uint32_t *words, size_t n)
{
    unsigned char *p = (unsigned char *)words;
    size_t left = n * sizeof(*words);
    while (left > 0) {
        ssize_t got = getrandom(p, left, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return BSO_EIO;
        }
        p += got;
        left -= (size_t)got;
    }
    return 0;
}

double bso_os_monotonic_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
