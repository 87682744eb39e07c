/*
 * gerror.c -- the one message lookup for project error codes (see
 * gerror.h).  It needs only libc and the two public headers, so the array
 * library compiles it in without linking libgalley.
 */
#include "gerror.h"

#include <string.h>

#include "galley.h"
#ifndef GA_NO_MPI
#define GA_NO_MPI /* only the error table: no MPI here */
#endif
#include "galley_array.h"

const char *gp_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define GP_X_MSG(name, value, msg)                                             \
    case value:                                                                \
        return msg;
        GFS_ERROR_TABLE(GP_X_MSG)
        GA_ERROR_TABLE(GP_X_MSG)
#undef GP_X_MSG
    default:
        break;
    }
    if (err < 0 && err > -4096)
        return strerror(-err);
    return "unknown error";
}
