/*
 * gsend.h -- the one "write all of it" loop, shared by libgalley and
 * galleyd: sockets (frames, replies) and files (metadata).
 *
 * Both calls retry after EINTR and after short writes until every byte is
 * written or an error occurs; a short write is normal on a socket whose
 * send buffer fills, or when a signal arrives mid-write.  Neither retries
 * EAGAIN: on a socket with a send timeout (SO_SNDTIMEO) or O_NONBLOCK that
 * is the caller's timeout, reported as -EAGAIN (or -EWOULDBLOCK).  After
 * an error an unknown prefix of the data has been written, so a stream is
 * unusable.
 *
 * Threads: reentrant; callers serialise writers of one descriptor.
 */
#ifndef GSEND_H
#define GSEND_H

#include <stddef.h>
#include <sys/uio.h>

/* Send iov[0..cnt) on socket fd with sendmsg(MSG_NOSIGNAL): a peer that
 * has gone gives -EPIPE, never SIGPIPE.  iov is modified in place: on
 * return it describes exactly the bytes not sent (sent entries get length
 * 0, a partly sent one is advanced), so a call after -EAGAIN with the same
 * iov carries on.  Entries may have length 0 and cnt may exceed IOV_MAX.
 * 0 or -errno. */
int gp_send_all(int fd, struct iovec *iov, int cnt);

/* Write len bytes at buf to fd (any descriptor: file, pipe, socket) with
 * write(2).  0 or -errno. */
int gp_write_all(int fd, const void *buf, size_t len);

#endif
