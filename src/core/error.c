/* Human-readable names for the BSO_E* codes. */
#include "bso/error.h"

const char *bso_strerror(int code)
{
    switch (code) {
    case BSO_OK:
        return "success";
    case BSO_EINVAL:
        return "invalid argument";
    case BSO_ENOMEM:
        return "out of memory";
    case BSO_ENOTFOUND:
        return "not found";
    case BSO_ESTATE:
        return "operation not valid in the current state";
    case BSO_EPRUNED:
        return "every batch size was pruned";
    case BSO_ERANGE:
        return "value out of range";
    case BSO_EPARSE:
        return "malformed input";
    case BSO_EIO:
        return "input/output error";
    case BSO_ECONFLICT:
        return "conflicts with stored state";
    case BSO_ENET:
        return "the server could not be reached";
    case BSO_EHTTP:
        return "the server answered with an error";
    case BSO_ENODEV:
        return "no device available";
    }
    return "unknown error";
}
