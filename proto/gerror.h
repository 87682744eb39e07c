/*
 * gerror.h -- the one message lookup for the file system's error codes.
 *
 * The codes are declared once, in the public header programs include:
 * GFS_ERROR_TABLE in galley.h (-1001..-1099, the client, the server and
 * the wire).  gp_strerror resolves them and negative errno values;
 * gfs_strerror and the server's log messages call it, and so does
 * ga_strerror for every code outside the array library's own range
 * (GA_ERROR_TABLE in galley_array.h, -2001..-2099, resolved in
 * arrays/ga_error.c: the lowest layer knows nothing of the layers above).
 *
 * Threads: any (returns static strings).
 */
#ifndef GERROR_H
#define GERROR_H

/*
 * Message for err: "success" for 0, the table's text for a project code,
 * strerror(-err) for a negative errno value (-4095..-1), else
 * "unknown error".  Never NULL.
 */
const char *gp_strerror(int err);

#endif
