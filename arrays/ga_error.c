/*
 * ga_error.c -- error codes and the last detailed message.
 *
 * Threads: the message buffer is thread-local; nothing else is shared.
 */
#include "ga_internal.h"
#include "gerror.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_msg[512] = "no error";

/* Our own range (GA_ERROR_TABLE) here; every other code, the file
 * system's and errno values, through proto/gerror.c, compiled into this
 * library (see the Makefile), so a code has one message everywhere. */
const char *ga_strerror(int err)
{
    switch (err) {
#define GA_X_MSG(name, value, msg)                                             \
    case value:                                                                \
        return msg;
        GA_ERROR_TABLE(GA_X_MSG)
#undef GA_X_MSG
    default:
        return gp_strerror(err);
    }
}

const char *ga_errmsg(void)
{
    return last_msg;
}

int ga_fail(int err, const char *fmt, ...)
{
    char tmp[sizeof(last_msg)]; /* the arguments may include ga_errmsg() */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    memcpy(last_msg, tmp, sizeof(tmp));
    return err;
}
