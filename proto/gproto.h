/*
 * gproto.h -- the Galley wire protocol, shared by libgalley and galleyd.
 *
 * Every message is a 24-byte frame header followed by `length` payload
 * bytes.  All integers are little-endian and encoded field by field (never a
 * memcpy of a struct).  A request carries status 0; its reply carries the
 * same opcode and request id and a status (0 or a negative error code as in
 * galley.h).  An error reply has an empty payload.
 *
 *   offset size field
 *   0      4    magic    GP_MAGIC
 *   4      2    version  GP_VERSION (bumped on every wire change)
 *   6      2    opcode   one of GP_OPCODES (gmsg.h)
 *   8      8    reqid    chosen by the client, echoed in the reply
 *   16     4    status   int32, replies only
 *   20     4    length   payload bytes, <= the receiver's limit
 *
 * Strings are u16 length + bytes (no NUL, no embedded NUL); blobs are u32
 * length + bytes.  Every length and count is checked against a limit before
 * anything is allocated.
 *
 * Threads: pure functions, no state; callable from any thread.
 */
#ifndef GPROTO_H
#define GPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_MAGIC 0x59414c47u /* "GLAY" little-endian */
#define GP_VERSION 7
#define GP_HDR_SIZE 24

/* Hard ceiling on any payload; servers advertise a lower limit in PING. */
#define GP_MAX_PAYLOAD (256u << 20)
/* Default per-request data limit a server accepts (bytes of data). */
#define GP_DEFAULT_DATA_LIMIT (32u << 20)
/* Limits on the description of a data request. */
#define GP_MAX_SEGMENTS (1u << 22) /* segments in one data request      */
#define GP_MAX_PIECES (1u << 24)   /* pieces after expanding strides     */
#define GP_MAX_LEVELS 8            /* nesting levels of a strided segment */
#define GP_MAX_NAMES 1000000       /* names in a list reply               */
/* A data request expands into at most data_limit / GP_PIECE_DIVISOR
 * pieces that move bytes (clients split by it): the server's memory for a
 * request stays within its data limit whatever the pieces' sizes. */
#define GP_PIECE_DIVISOR 32

/*
 * Every message, once, with its request and reply fields: gmsg.h (the
 * structs and codecs made from it: gcodec.h).  hid = u64 subfile header
 * id; fkid = u64 fork handle; str/blob as above; rec = u32 nsub, nsub x
 * (u32 server, u64 hid), blob attrs; segs = u32 nseg, nseg x segment (see
 * "Data-request segments" below).
 *
 * Limits: a frame's payload is at most GP_MAX_PAYLOAD; the data bytes of
 * one IO request at most the data limit the server gave in PING (clients
 * split larger requests; GFS_ETOOBIG otherwise).
 * FETCH_ADD's delta is a two's-complement int64; a counter holds 0 ..
 * INT64_MAX, and an add that would leave that range answers -ERANGE and
 * changes nothing.  FETCH_SET replaces the value (0 .. INT64_MAX, else
 * -ERANGE) and returns the old one, atomically (a shared file pointer's
 * reset in one request).
 * LOCK covers [off, off + len) of the subfile's lock space (len 0: to the
 * end); shared locks share, an exclusive lock excludes other connections'
 * overlapping locks; a connection's own locks never conflict.  The server
 * waits at most about a second, then answers -EAGAIN and the client asks
 * again (so a long wait never looks like a dead server).  UNLOCK must name
 * exactly a held (hid, off, len), else -ENOLCK.  A connection's locks and
 * name reservations go when it drops.
 * PLOCK, PGETLK, PRELEASE are POSIX locks (fcntl, lockf, flock) in the
 * same lock space: a lock is held by (connection, owner), where owner 0 is
 * the client process and others are its open file descriptions, so two
 * owners of one connection conflict like two processes.  PLOCK sets the
 * owner's lock over [off, off + len) to type, splitting and merging the
 * owner's locks as fcntl does (GP_PLOCK_UNLOCK frees a range, never an
 * error); it never conflicts with the owner's own locks.  Without
 * GP_PLOCK_WAIT a conflict answers -EAGAIN at once; with it the server
 * waits as for LOCK (a fraction of a second) before -EAGAIN.  PGETLK
 * answers the first conflicting lock (type GP_PLOCK_UNLOCK: none), with
 * its holder's pid.  GP_PLOCK_WHOLE locks (flock) never meet range locks.
 * LOCK's locks conflict with every POSIX lock of another connection.
 * An unknown hid or fkid gives
 * GFS_ESTALE; offsets past GP_MAX_OFFSET give -EFBIG.
 *
 * The same-host transport.  Besides TCP, a server listens on the Unix
 * socket in the abstract namespace named gp_local_addr(its TCP address),
 * or gp_local_addr("*:PORT") when it listens on a wildcard address: a
 * client that finds the name of the address it resolved (or, when that
 * address is one of its own host's, "*:PORT") is on the server's host and
 * in its network namespace, and uses it instead of TCP.  On such a local
 * connection the server knows the client's pid from the socket (SO_PEERCRED),
 * and data may skip the socket altogether (cross-memory attach): CMA_PROBE asks
 * the server to copy 8 bytes of the client's memory from src to dst, which
 * tells the client that process_vm_readv/writev work between the two
 * (same user, ptrace rules).  IO_READV / IO_WRITEV are IO_READ / IO_WRITE
 * whose data is not in the frame: `mem` = u32 nseg, nseg x segment, in
 * the same encoding as the file side's but naming addresses in the
 * client's memory (extents, or strided with one level), which hold the
 * data stream in order (they add up to the file segments' bytes).  The server
 * copies straight between that memory and its cache, then replies; the client
 * must keep the memory valid until the reply.  On TCP connections these three
 * opcodes answer -EOPNOTSUPP.
 *
 * The cluster secret (gauth.h).  A server that has a key answers every
 * request but AUTH and AUTH_PROVE with GFS_EAUTH until the connection has
 * proven it knows the key; a wrong proof is answered GFS_EAUTH and the
 * connection is closed.  A server without a key answers AUTH -EOPNOTSUPP
 * and serves everyone.
 *
 * Server resources (galleyd options): a frame's payload may be at most
 * twice the data limit plus GP_FRAME_SLACK (the description of a data
 * request is no larger than its data; clients split by both); larger ones
 * get GFS_ETOOBIG and are discarded.  A frame, once begun, must keep
 * arriving: a connection that sends part of a frame and then nothing for
 * the frame timeout is closed, and so is one that has not authenticated
 * within it.  Connections past the server's cap get GFS_ECONNLIMIT to
 * their first request and are closed.
 */
#define GP_FRAME_SLACK (64u << 10)

/* PLOCK / PGETLK types and flags (see above). */
#define GP_PLOCK_UNLOCK 0
#define GP_PLOCK_SHARED 1
#define GP_PLOCK_EXCL 2
#define GP_PLOCK_WAIT 1u
#define GP_PLOCK_WHOLE 2u
#include "gmsg.h" /* GP_OPCODES: every message and its fields */

enum gp_opcode {
#define GP_X_ENUM(name, code, doc) GP_OP_##name = code,
    GP_OPCODES(GP_X_ENUM)
#undef GP_X_ENUM
};

/* Name of an opcode ("PING"), or NULL if unknown. */
const char *gp_opname(unsigned op);

/* ------------------------------------------------------------------------
 * Frame header
 * ------------------------------------------------------------------------ */
typedef struct gp_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t opcode;
    uint64_t reqid;
    int32_t status;
    uint32_t length;
} gp_hdr;

void gp_hdr_encode(const gp_hdr *h, uint8_t out[GP_HDR_SIZE]);
void gp_hdr_decode(const uint8_t in[GP_HDR_SIZE], gp_hdr *h);

/* ------------------------------------------------------------------------
 * Payload writer: grows as needed; after any failure `err` is set and later
 * puts do nothing.  Free with gp_wbuf_free (NULL-safe).
 * ------------------------------------------------------------------------ */
typedef struct gp_wbuf {
    uint8_t *data;
    size_t len, cap;
    int err; /* 0 or -ENOMEM / -ENAMETOOLONG / -E2BIG */
} gp_wbuf;

void gp_wbuf_init(gp_wbuf *w);
void gp_wbuf_free(gp_wbuf *w);
void gp_put_u8(gp_wbuf *w, uint8_t v);
void gp_put_u16(gp_wbuf *w, uint16_t v);
void gp_put_u32(gp_wbuf *w, uint32_t v);
void gp_put_u64(gp_wbuf *w, uint64_t v);
void gp_put_str(gp_wbuf *w, const char *s); /* u16 length + bytes   */
void gp_put_blob(gp_wbuf *w, const void *p, uint32_t n);

/* ------------------------------------------------------------------------
 * Payload reader: bounds-checked; after a failure `err` is -EPROTO-like
 * (GFS_EPROTO) and gets return zero/empty.
 * ------------------------------------------------------------------------ */
typedef struct gp_rbuf {
    const uint8_t *data;
    size_t len, pos;
    int err;
} gp_rbuf;

void gp_rbuf_init(gp_rbuf *r, const void *data, size_t len);
uint8_t gp_get_u8(gp_rbuf *r);
uint16_t gp_get_u16(gp_rbuf *r);
uint32_t gp_get_u32(gp_rbuf *r);
uint64_t gp_get_u64(gp_rbuf *r);
/* Copy a string of at most max bytes into out (size max + 1), NUL-ended.
 * Fails on longer strings or embedded NULs. */
void gp_get_str(gp_rbuf *r, char *out, size_t max);
/* Point at a blob of at most max bytes inside the buffer (no copy). */
const uint8_t *gp_get_blob(gp_rbuf *r, uint32_t *n, uint32_t max);
/* Remaining bytes. */
size_t gp_remaining(const gp_rbuf *r);
/* True when everything was consumed without error. */
bool gp_done(const gp_rbuf *r);

/* The one rule for file and fork names, on both sides (the length is the
 * caller's: GFS_NAME_MAX, GFS_FORK_NAME_MAX): not empty, no newline (the
 * record files and listings are line-based).  A request field of kind
 * `name` (gmsg.h) is checked with it as it is decoded. */
bool gp_name_ok(const char *name);

/* ------------------------------------------------------------------------
 * File records (NameServer)
 * ------------------------------------------------------------------------ */
#define GP_MAX_SUBFILES 256
#define GP_ATTR_MAX 4096

/* Replicated files (libgalley/repl.c states the rules): R copies of every
 * subfile.  Copy 0 of subfile s is (server[s], hid[s]) of the record; the
 * others are here.  On the wire a record of R = 1 carries only ncopy
 * after the attributes; the rest follows when R > 1. */
#define GP_MAX_COPIES 3
enum { GP_COPY_INSYNC = 0, GP_COPY_STALE = 1 };
typedef struct gp_repl {
    uint8_t ncopy; /* R: 1..GP_MAX_COPIES */
    uint64_t gen;  /* layout generation: +1 on every change of a state */
    uint32_t server[GP_MAX_SUBFILES][GP_MAX_COPIES];
    uint64_t hid[GP_MAX_SUBFILES][GP_MAX_COPIES];
    uint64_t dsid[GP_MAX_SUBFILES][GP_MAX_COPIES]; /* the server's data
                                                    * directory (REPL_ID) */
    uint8_t state[GP_MAX_SUBFILES][GP_MAX_COPIES]; /* GP_COPY_* */
} gp_repl;

typedef struct gp_record {
    uint32_t nsub;
    uint32_t server[GP_MAX_SUBFILES];
    uint64_t hid[GP_MAX_SUBFILES];
    uint32_t attrlen;
    char attrs[GP_ATTR_MAX + 1]; /* "key=value\n" lines, NUL-terminated */
    gp_repl repl;
} gp_record;

void gp_put_record(gp_wbuf *w, const gp_record *rec);
/* *dst = *src, but only the parts in use (nsub subfiles, attrlen bytes of
 * attributes): a record is about 24 KB, most of it room for the largest
 * file; the rest of dst is left as it was. */
void gp_record_copy(gp_record *dst, const gp_record *src);
/* Validates nsub (1..GP_MAX_SUBFILES), attr length and content, and the
 * replica part. */
void gp_get_record(gp_rbuf *r, gp_record *rec);
/* The parts: the record as before replication (base; a stored record of
 * the old format is only that) and the replica part (gp_put_record /
 * gp_get_record call them); gp_repl_single: the replica part of R = 1. */
void gp_get_record_base(gp_rbuf *r, gp_record *rec);
void gp_put_repl(gp_wbuf *w, const gp_record *rec);
void gp_get_repl(gp_rbuf *r, gp_record *rec);
void gp_repl_single(gp_record *rec);

/* ------------------------------------------------------------------------
 * Data-request segments
 *
 * A data request names fork bytes as a list of segments, each either an
 * extent (offset, length) or a nested-strided block: `size` bytes at
 * offset + sum(i_k * stride_k) for every index vector, levels outermost
 * first.  The data of a write (and the reply of a read) is the expansion's
 * pieces in order, concatenated.
 *   extent : u8 0, u64 off, u64 len
 *   strided: u8 1, u64 off, u64 size, u8 nlev, nlev x (u64 count, u64 stride)
 * ------------------------------------------------------------------------ */
typedef struct gp_seg {
    uint8_t kind; /* GP_SEG_EXTENT or GP_SEG_STRIDED */
    uint8_t nlev;
    uint64_t off;
    uint64_t size; /* extent length, or bytes per strided piece */
    uint64_t count[GP_MAX_LEVELS];
    uint64_t stride[GP_MAX_LEVELS];
} gp_seg;

enum { GP_SEG_EXTENT = 0, GP_SEG_STRIDED = 1 };

void gp_put_seg(gp_wbuf *w, const gp_seg *s);
void gp_get_seg(gp_rbuf *r, gp_seg *s);

/* Pieces and bytes a segment expands to; false on overflow or on offsets
 * beyond GP_MAX_OFFSET. */
#define GP_MAX_OFFSET (UINT64_C(1) << 62)
bool gp_seg_measure(const gp_seg *s, uint64_t *npieces, uint64_t *nbytes);

/* Expanding a segment into pieces: gp_seg_expand (extent.h). */

/* ------------------------------------------------------------------------
 * Same-host transport
 * ------------------------------------------------------------------------ */
#define GP_LOCAL_PREFIX "galleyd@"

/* The abstract Unix socket address of the server listening on numeric
 * host:port ("127.0.0.1:40123", "[::1]:40123", or "*:40123" for a
 * wildcard address): NUL, then "galleyd@127.0.0.1:40123".  Fills *sa and
 * returns the address length for bind/connect, or -1 when the name does
 * not fit in sun_path. */
struct sockaddr_un;
int gp_local_addr(struct sockaddr_un *sa, const char *hostport);

/* The message structs and codecs made from gmsg.h. */
#include "gcodec.h"

#endif /* GPROTO_H */
