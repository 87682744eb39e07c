/*
 * gerror.c -- the one message lookup for the file system's error codes
 * (see gerror.h).  It needs only libc and galley.h, so the array library
 * compiles it in without linking libgalley; the array library's own codes
 * are its own table's (arrays/ga_error.c), this layer knows nothing above it.
 */
#include "gerror.h"

#include <string.h>

#include "galley.h"

const char *gp_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define GP_X_MSG(name, value, msg)                                             \
    case value:                                                                \
        return msg;
        GFS_ERROR_TABLE(GP_X_MSG)
#undef GP_X_MSG
    default:
        break;
    }
    if (err < 0 && err > -4096)
        return strerror(-err);
    return "unknown error";
}
