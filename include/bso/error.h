/*
 * Error codes shared by every BSO component. Functions return 0 on success or one of these
 * negative codes; bso_strerror() turns a code into a short English phrase.
 */
#ifndef BSO_ERROR_H
#define BSO_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BSO_API __attribute__((visibility("default")))
#else
#define BSO_API
#endif

enum bso_error {
    BSO_OK = 0,
    BSO_EINVAL = -1,    /* invalid argument or input */
    BSO_ENOMEM = -2,    /* out of memory */
    BSO_ENOTFOUND = -3, /* no such job, trial or arm */
    BSO_ESTATE = -4,    /* the operation does not fit the current state */
    BSO_EPRUNED = -5,   /* no batch size to give: every one pruned, or none for now */
    BSO_ERANGE = -6,    /* a value or a count is out of its allowed range */
    BSO_EPARSE = -7,    /* malformed text (JSON, numbers) */
    BSO_EIO = -8,       /* an operating-system or device call failed */
    BSO_ECONFLICT = -9, /* the request contradicts stored state */
    BSO_ENET = -10,     /* the server could not be reached, or did not answer in time */
    BSO_EHTTP = -11,    /* the server answered with an error status */
    BSO_ENODEV = -12,   /* no device or energy source is available */
};

/* A static, never-NULL description of an error code. */
BSO_API const char *bso_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
