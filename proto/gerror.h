/*
 * gerror.h -- the one message lookup for every project error code.
 *
 * The codes themselves are declared once each, in the public headers that
 * programs include: GFS_ERROR_TABLE in galley.h (-1001..-1099, the client,
 * the server and the wire) and GA_ERROR_TABLE in galley_array.h
 * (-2001..-2099, the array library's own range).  gp_strerror resolves
 * both ranges and negative errno values; gfs_strerror, ga_strerror and the
 * server's log messages all call it, so a code has one message everywhere.
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
