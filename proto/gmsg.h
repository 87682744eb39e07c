/*
 * gmsg.h -- every message of the wire protocol, once: its opcode, and the
 * fields of its request and of its reply, in wire order.
 *
 * From this table the preprocessor makes, for both libgalley and galleyd
 * (gcodec.h, gcodec.c): a struct per message and direction (gp_NAME_req,
 * gp_NAME_rep), and an encoder and a decoder for each
 * (gp_NAME_req_encode / gp_NAME_req_decode, ...); the unit tests round-trip
 * and fuzz every message by iterating it, and proto/gen_pyconst.py reads
 * the opcodes for the Python tests.  Frame layout, limits and the meaning
 * of each message: gproto.h.
 *
 * GP_OPCODES(X) lists the messages: X(name, opcode, note).  For each name,
 * GP_name_REQ(F) and GP_name_REP(F) list the fields as F(kind, field, ...):
 *
 *   kind    wire                          struct member(s)
 *   u8..u64 little-endian integer         uintN_t field
 *   str, MAX  u16 length + bytes (no NUL) const char *field (encode);
 *             decode checks <= MAX and    char field_buf[MAX + 1], and
 *             copies it                   field points at it (decode)
 *   name, MAX a str that names a file or  as str
 *             fork: decode also checks
 *             gp_name_ok (-EINVAL), so no
 *             handler repeats the check
 *   blob, MAX u32 length + bytes          const uint8_t *field, uint32_t
 *             (decode: <= MAX, no copy)   field_len (points into the frame)
 *   rec     gp_put_record / gp_get_record gp_record *field: the caller
 *                                         points it at storage to decode
 *   list, ITEM, MAX  u32 count, then      uint32_t field (the count);
 *             count x ITEM (fields        items go through gp_ITEM_item_
 *             GP_ITEM_ITEM(F))            encode/_decode one at a time
 *   segs    u32 nseg, nseg x segment      none: the data path's own
 *   mem     u32 nseg, nseg x segment      helpers (io.c, cma.c) handle
 *   data    the data bytes                these, after the fields
 *
 * list, segs, mem and data are tails: they come last, and the message's
 * decoder leaves the reader at them (the caller decodes them and then
 * calls gp_decode_end).  Every other decoder fails unless the payload is
 * exactly its fields.
 *
 * To add a message: a row in GP_OPCODES with a new opcode, its
 * GP_name_REQ and GP_name_REP below, its body gsrv_do_name in servers/
 * (the server's op that decodes the request, calls the body and encodes
 * the reply is made from this table: servers/gsrv_stubs.h says what a
 * body gets and does, also for tails, reply lists, data and
 * descriptors), a client call in libgalley/; `python3
 * proto/gen_pyconst.py`.  Changing a message's fields is an edit here
 * (and GP_VERSION in gproto.h), plus the code that uses the field.
 */
#ifndef GMSG_H
#define GMSG_H

#define GP_OPCODES(X)                                                          \
    X(PING, 1, "handshake: the server's protocol version and data limit")      \
    X(STATFS, 2, "server usage, see gfs_server_stat")                          \
    X(CMA_PROBE, 3, "local only: the server copies 8 bytes src -> dst")        \
    X(AUTH, 4, "client nonce -> server nonce (gauth.h)")                       \
    X(AUTH_PROVE, 5, "client mac -> server mac (gauth.h)")                     \
    X(NS_RESERVE, 10, "reserve a name for a create in progress")               \
    X(NS_COMMIT, 11, "store the record of a reserved name")                    \
    X(NS_RELEASE, 12, "drop a reservation")                                    \
    X(NS_LOOKUP, 13, "a name's record")                                        \
    X(NS_REMOVE, 14, "remove a record, answering it")                          \
    X(NS_LIST, 15, "names with a prefix")                                      \
    X(NS_SETATTR, 16, "replace a record's attributes")                         \
    X(SUB_CREATE, 20, "a subfile header for (file, subfile index)")            \
    X(SUB_DELETE, 21, "delete a subfile header and its forks")                 \
    X(SUB_LIST, 22, "headers with hid > after, sorted, at most 4096")          \
    X(FORK_CREATE, 30, "create a fork of a subfile")                           \
    X(FORK_OPEN, 31, "open a fork: its handle and size")                       \
    X(FORK_CLOSE, 32, "close an open fork handle")                             \
    X(FORK_DELETE, 33, "delete a fork")                                        \
    X(FORK_LIST, 34, "a subfile's forks and sizes")                            \
    X(FORK_SIZE, 35, "a fork's size")                                          \
    X(FORK_TRUNCATE, 36, "set a fork's size")                                  \
    X(FORK_SYNC, 37, "fsync a fork's data and metadata")                       \
    X(FORK_REOPEN, 38, "re-register an open handle after a reconnect")         \
    X(IO_READ, 40, "read segments; the data follows the reply")                \
    X(IO_WRITE, 41, "write segments; the data follows the request")            \
    X(IO_READV, 42, "IO_READ into the client's memory (local, CMA)")           \
    X(IO_WRITEV, 43, "IO_WRITE from the client's memory (local, CMA)")         \
    X(IO_STATS, 44, "bytes moved for same-host / other clients")               \
    X(DIRECT_OPEN, 45, "same host, same uid: the fork's file by SCM_RIGHTS")   \
    X(DIRECT_CLOSE, 46, "drop a direct hold; the bytes it moved (IO_STATS)")   \
    X(FETCH_ADD, 50, "add delta to a subfile's counter, answer the old value") \
    X(LOCK, 51, "byte-range lock; len 0 = to the end")                         \
    X(UNLOCK, 52, "release exactly a held (hid, off, len)")                    \
    X(FETCH_SET, 53, "set a subfile's counter, answer the old value")          \
    X(PLOCK, 54, "POSIX lock: set an owner's lock over a range")               \
    X(PGETLK, 55, "POSIX lock: the first lock that would conflict")            \
    X(PRELEASE, 56, "drop every POSIX lock of an owner on a subfile")          \
    X(BLOCK_LOCK, 57, "lock block numbers, apart from byte-range locks")       \
    X(BLOCK_UNLOCK, 58, "release exactly a held (hid, off, len) block lock")   \
    X(NS_REPL_SET, 60, "replace a record's copies if its generation is newer") \
    X(REPL_ID, 61, "the id of the server's data directory")                    \
    X(IO_CREAD, 70, "IO_READ of a checksummed fork: the reply data's CRC32C")  \
    X(IO_CWRITE, 71, "IO_WRITE with the data's CRC32C, checked before it")     \
    X(SCRUB, 72, "verify every stored chunk of a fork against its CRC")        \
    X(DIRECT_COPEN, 73, "DIRECT_OPEN of a checksummed fork: file or sidecar")  \
    X(SUB_CREATE_FORK, 80, "SUB_CREATE and a first fork, one log commit")      \
    X(NS_LEASE, 81, "NS_LOOKUP, and a lease on the record for a client")       \
    X(NS_COMMIT_LEASE, 82, "NS_COMMIT, and a lease on the new record")         \
    X(NS_RENEW, 83, "renew a client's leases; the names recalled since")       \
    X(SUB_DELETE_MANY, 84, "SUB_DELETE of many headers, one log commit")       \
    X(NS_LET_GO, 85, "a client lets all its leases here go (idle)")            \
    X(NS_LEASE_MANY, 86, "NS_LEASE of many names: each one's record or error") \
    X(FORK_SIZES, 87, "one fork's size and time in each of many subfiles")     \
    X(LOG_SYNC, 88, "make every metadata change answered so far durable")      \
    X(DIRECT_WOPEN, 90, "DIRECT_OPEN to write, maybe in locked mode")

/* ------------------------------------------------------------ fields ---- */

#define GP_PING_REQ(F)
#define GP_PING_REP(F) F(u16, version) F(u64, data_limit) F(u64, pid)

#define GP_STATFS_REQ(F)
#define GP_STATFS_REP(F)                                                       \
    F(u64, bytes_used)                                                         \
    F(u64, bytes_free)                                                         \
    F(u64, bytes_total)                                                        \
    F(u64, nrecords)                                                           \
    F(u64, nsubfiles)                                                          \
    F(u64, nforks)                                                             \
    F(u64, cache_hits)                                                         \
    F(u64, cache_misses)

#define GP_CMA_PROBE_REQ(F) F(u64, src) F(u64, dst)
#define GP_CMA_PROBE_REP(F)

#define GP_AUTH_REQ(F) F(blob, cnonce, GP_NONCE_BYTES)
#define GP_AUTH_REP(F) F(blob, snonce, GP_NONCE_BYTES)

#define GP_AUTH_PROVE_REQ(F) F(blob, mac, GP_MAC_BYTES)
#define GP_AUTH_PROVE_REP(F) F(blob, mac, GP_MAC_BYTES)

#define GP_NS_RESERVE_REQ(F) F(name, name, GFS_NAME_MAX)
#define GP_NS_RESERVE_REP(F)

#define GP_NS_COMMIT_REQ(F) F(name, name, GFS_NAME_MAX) F(rec, rec)
#define GP_NS_COMMIT_REP(F)

#define GP_NS_RELEASE_REQ(F) F(name, name, GFS_NAME_MAX)
#define GP_NS_RELEASE_REP(F)

#define GP_NS_LOOKUP_REQ(F) F(name, name, GFS_NAME_MAX)
#define GP_NS_LOOKUP_REP(F) F(rec, rec)

#define GP_NS_REMOVE_REQ(F) F(name, name, GFS_NAME_MAX)
#define GP_NS_REMOVE_REP(F) F(rec, rec)

/* Record leases (nameserver.c, rcache.c): lease_ms 0 = none granted.  A
 * client drops the names a NS_RENEW reply recalls, then acknowledges
 * `seq` in its next NS_RENEW; known 0: the server has no leases of this
 * client (restarted): the client drops every lease it had there.  epoch:
 * the server's start (random); a renewal extends only the leases granted
 * in its epoch.  wait_ms: while nothing is recalled, the server holds the
 * reply up to that long (at most half a lease) and answers as soon as a
 * name is recalled, so a holder hears of a recall at once (the client
 * sends it on a connection of its own: ns_lease.c). */
#define GP_NS_LEASE_REQ(F) F(u64, client) F(name, name, GFS_NAME_MAX)
#define GP_NS_LEASE_REP(F) F(u32, lease_ms) F(u64, epoch) F(rec, rec)
#define GP_NS_COMMIT_LEASE_REQ(F)                                              \
    F(u64, client) F(name, name, GFS_NAME_MAX) F(rec, rec)
#define GP_NS_COMMIT_LEASE_REP(F) F(u32, lease_ms) F(u64, epoch)
#define GP_NS_RENEW_REQ(F) F(u64, client) F(u64, acked) F(u32, wait_ms)
#define GP_NS_RENEW_REP(F)                                                     \
    F(u32, lease_ms)                                                           \
    F(u64, epoch) F(u8, known) F(u64, seq) F(list, n, NAME, GP_MAX_NAMES)

/* NS_LEASE_MANY: NS_LEASE of each name in `names` (n names, each
 * NUL-terminated, at most GP_MAX_LEASES of them and GP_ATTR_MAX bytes in
 * all: the largest blob), all of them at this server;
 * the list holds a LEASED item per name in that order, each followed,
 * when its err is 0, by the name's record (gp_put_record), leased for
 * its lease_ms as by NS_LEASE (0: no lease).  err: a positive errno
 * (ENOENT: no such name here). */
#define GP_MAX_LEASES 64
#define GP_NS_LEASE_MANY_REQ(F) F(u64, client) F(blob, names, GP_ATTR_MAX)
#define GP_NS_LEASE_MANY_REP(F) F(u64, epoch) F(list, n, LEASED, GP_MAX_LEASES)

#define GP_NS_LET_GO_REQ(F) F(u64, client)
#define GP_NS_LET_GO_REP(F)

#define GP_NS_LIST_REQ(F) F(str, prefix, GFS_NAME_MAX)
#define GP_NS_LIST_REP(F) F(list, n, NAME, GP_MAX_NAMES)

#define GP_NS_SETATTR_REQ(F)                                                   \
    F(name, name, GFS_NAME_MAX) F(blob, attrs, GP_ATTR_MAX)
#define GP_NS_SETATTR_REP(F)

#define GP_SUB_CREATE_REQ(F) F(name, filename, GFS_NAME_MAX) F(u32, subfile)
#define GP_SUB_CREATE_REP(F) F(u64, hid)

#define GP_SUB_CREATE_FORK_REQ(F)                                              \
    F(name, filename, GFS_NAME_MAX)                                            \
    F(u32, subfile) F(name, fork, GFS_FORK_NAME_MAX)
#define GP_SUB_CREATE_FORK_REP(F) F(u64, hid)

#define GP_SUB_DELETE_REQ(F) F(u64, hid)
#define GP_SUB_DELETE_REP(F)

/* SUB_DELETE_MANY: hids is n little-endian u64 header ids (at most
 * GP_MAX_DELETES), deleted as SUB_DELETE each, answered after one log
 * commit for all; deleted: how many there were (one already gone is
 * not an error). */
#define GP_MAX_DELETES 512 /* (GP_ATTR_MAX bytes: the largest blob) */
#define GP_SUB_DELETE_MANY_REQ(F) F(blob, hids, GP_MAX_DELETES * 8)
#define GP_SUB_DELETE_MANY_REP(F) F(u32, deleted)

#define GP_SUB_LIST_REQ(F) F(u64, after)
#define GP_SUB_LIST_REP(F) F(list, n, SUB, GP_MAX_NAMES)

#define GP_FORK_CREATE_REQ(F) F(u64, hid) F(name, fork, GFS_FORK_NAME_MAX)
#define GP_FORK_CREATE_REP(F)

#define GP_FORK_OPEN_REQ(F) F(u64, hid) F(name, fork, GFS_FORK_NAME_MAX)
#define GP_FORK_OPEN_REP(F) F(u64, fkid) F(u64, size)

#define GP_FORK_CLOSE_REQ(F) F(u64, fkid)
#define GP_FORK_CLOSE_REP(F)

#define GP_FORK_DELETE_REQ(F) F(u64, hid) F(name, fork, GFS_FORK_NAME_MAX)
#define GP_FORK_DELETE_REP(F)

#define GP_FORK_LIST_REQ(F) F(u64, hid)
#define GP_FORK_LIST_REP(F) F(list, n, FORK, GP_MAX_NAMES)

/* FORK_SIZES: fork `fork` of each subfile in hids (n little-endian u64
 * header ids, at most GP_MAX_DELETES): a SIZE item per hid in that
 * order, as FORK_LIST's FORK item of that fork, or err (a positive
 * errno: ESTALE no such subfile, ENOENT no such fork). */
#define GP_FORK_SIZES_REQ(F)                                                   \
    F(name, fork, GFS_FORK_NAME_MAX) F(blob, hids, GP_MAX_DELETES * 8)
#define GP_FORK_SIZES_REP(F) F(list, n, SIZE, GP_MAX_DELETES)

#define GP_FORK_SIZE_REQ(F) F(u64, fkid)
#define GP_FORK_SIZE_REP(F) F(u64, size) F(u64, mtime) /* as GP_ITEM_FORK */

#define GP_FORK_TRUNCATE_REQ(F) F(u64, fkid) F(u64, size)
#define GP_FORK_TRUNCATE_REP(F)

#define GP_FORK_SYNC_REQ(F) F(u64, fkid)
#define GP_FORK_SYNC_REP(F)

/* LOG_SYNC: the server's metadata log durable up to now (galleyd's
 * --commit written answers before its fdatasync); the log's counts */
#define GP_LOG_SYNC_REQ(F)
#define GP_LOG_SYNC_REP(F) F(u64, records) F(u64, commits)

#define GP_FORK_REOPEN_REQ(F) F(u64, fkid)
#define GP_FORK_REOPEN_REP(F) F(u64, size)

/* The IO requests' fkid (IO_READ/WRITE, their V and C forms): a fork's
 * handle (FORK_OPEN's answer), or GP_FKID_OPENED | R: the fork that this
 * connection's FORK_OPEN with request id R opened, so that an open and
 * its first transfer go together, one round trip (a server serves one
 * connection's requests in order).  The server remembers a connection's
 * last GP_OPENED_KEPT opens; it answers the open's own error when that
 * failed, and GFS_ESTALE when it does not remember R (more opens on the
 * connection since: the client then sends the transfer again under the
 * fork's handle). */
#define GP_FKID_OPENED (1ull << 63)
#define GP_OPENED_KEPT 16

#define GP_IO_READ_REQ(F) F(u64, fkid) F(segs, segs)
#define GP_IO_READ_REP(F) F(u64, size) F(data, data)

#define GP_IO_WRITE_REQ(F) F(u64, fkid) F(segs, segs) F(data, data)
#define GP_IO_WRITE_REP(F) F(u64, size)

#define GP_IO_READV_REQ(F) F(u64, fkid) F(segs, segs) F(mem, mem)
#define GP_IO_READV_REP(F) F(u64, size)

#define GP_IO_WRITEV_REQ(F) F(u64, fkid) F(segs, segs) F(mem, mem)
#define GP_IO_WRITEV_REP(F) F(u64, size)

#define GP_IO_STATS_REQ(F)
#define GP_IO_STATS_REP(F)                                                     \
    F(u64, written_local)                                                      \
    F(u64, written_remote)                                                     \
    F(u64, read_local)                                                         \
    F(u64, read_remote)

/* DIRECT_OPEN: the reply of a granted request carries one descriptor of
 * the fork's Unix file (SCM_RIGHTS, on the reply's first byte): read-only
 * unless write; the fork's byte x is the file's byte base + x.  fkid 0
 * names no fork: it only asks whether this connection may have
 * descriptors (0, or GFS_EDIRECT).  servers/direct.c states the rules. */
#define GP_DIRECT_OPEN_REQ(F) F(u64, fkid) F(u8, write)
#define GP_DIRECT_OPEN_REP(F) F(u64, base) F(u64, size)

/* DIRECT_WOPEN: DIRECT_OPEN of a writable descriptor (write 1) that may
 * also put the fork in locked mode.  In locked mode every writer of the
 * fork's file -- each direct holder and the server -- takes an exclusive
 * OFD lock (F_OFD_SETLKW) on the bytes it writes, so a writer may write a
 * whole span read under that lock (data sieving, fdio.h).  sieve 1 asks
 * for locked mode: refused (GFS_EDIRECT) while a writer that does not
 * lock holds the fork; sieve 0 takes the mode the fork is in.  locked says
 * which one this descriptor is.  A fork leaves locked mode when its last
 * writable descriptor is released.  servers/direct.c states the rules. */
#define GP_DIRECT_WOPEN_REQ(F) F(u64, fkid) F(u8, sieve)
#define GP_DIRECT_WOPEN_REP(F) F(u64, base) F(u64, size) F(u8, locked)

/* DIRECT_CLOSE: the holder has closed its descriptor of (fkid, write) and
 * moved these bytes through it (counted in IO_STATS as same-host). */
#define GP_DIRECT_CLOSE_REQ(F)                                                 \
    F(u64, fkid) F(u8, write) F(u64, written) F(u64, read)
#define GP_DIRECT_CLOSE_REP(F)

#define GP_FETCH_ADD_REQ(F) F(u64, hid) F(str, key, GFS_NAME_MAX) F(u64, delta)
#define GP_FETCH_ADD_REP(F) F(u64, old)

#define GP_LOCK_REQ(F) F(u64, hid) F(u64, off) F(u64, len) F(u8, excl)
#define GP_LOCK_REP(F)

#define GP_UNLOCK_REQ(F) F(u64, hid) F(u64, off) F(u64, len)
#define GP_UNLOCK_REP(F)

#define GP_FETCH_SET_REQ(F) F(u64, hid) F(str, key, GFS_NAME_MAX) F(u64, value)
#define GP_FETCH_SET_REP(F) F(u64, old)

/* POSIX locks (fcntl, lockf, flock; servers/rangelock.c): owner names the
 * holder within the connection (0: the process, else an open file
 * description); type GP_PLOCK_UNLOCK / _SHARED / _EXCL; flags GP_PLOCK_WAIT
 * (wait a while before -EAGAIN) and GP_PLOCK_WHOLE (flock's locks, apart
 * from byte ranges); pid is what a conflicting PGETLK reports (u32 of an
 * int32: 0xffffffff = -1).  held: the connection's POSIX locks on this
 * server after the call (the client renews leases while it is > 0). */
#define GP_PLOCK_REQ(F)                                                        \
    F(u64, hid)                                                                \
    F(u64, owner)                                                              \
    F(u64, off)                                                                \
    F(u64, len)                                                                \
    F(u8, type)                                                                \
    F(u8, flags)                                                               \
    F(u32, pid)
#define GP_PLOCK_REP(F) F(u32, held)

#define GP_PGETLK_REQ(F)                                                       \
    F(u64, hid) F(u64, owner) F(u64, off) F(u64, len) F(u8, type) F(u8, flags)
#define GP_PGETLK_REP(F) F(u8, type) F(u64, off) F(u64, len) F(u32, pid)

#define GP_PRELEASE_REQ(F) F(u64, hid) F(u64, owner)
#define GP_PRELEASE_REP(F) F(u32, held)

/* The locality layout's claims of block numbers [off, off + len): the same
 * semantics as LOCK / UNLOCK, in a space of their own, so that no byte
 * offset is given up to them and a byte-range lock never waits on one. */
#define GP_BLOCK_LOCK_REQ(F) F(u64, hid) F(u64, off) F(u64, len) F(u8, excl)
#define GP_BLOCK_LOCK_REP(F)

#define GP_BLOCK_UNLOCK_REQ(F) F(u64, hid) F(u64, off) F(u64, len)
#define GP_BLOCK_UNLOCK_REP(F)

/* Checksummed forks (servers/csum.c states the rules).  IO_CREAD and
 * IO_CWRITE are IO_READ and IO_WRITE with the CRC32C (crc32c.h) of the
 * data that follows the fields, computed by the sender over the data in
 * order: the receiver checks it before using the data (a write that fails
 * it answers GFS_ECHECKSUM_WIRE and writes nothing).  Data always travels
 * inline.  SCRUB reads every chunk of the fork from the disk (not the
 * cache) and checks it: chunks checked, chunks failing, the first
 * failing chunk's number (UINT64_MAX: none). */
#define GP_IO_CREAD_REQ(F) F(u64, fkid) F(segs, segs)
#define GP_IO_CREAD_REP(F) F(u64, size) F(u32, crc) F(data, data)

#define GP_IO_CWRITE_REQ(F) F(u64, fkid) F(u32, crc) F(segs, segs) F(data, data)
#define GP_IO_CWRITE_REP(F) F(u64, size)

/* DIRECT_COPEN: DIRECT_OPEN for a checksummed fork's same-host client,
 * which then keeps the CRCs itself (common/csfile.h; servers/direct.c).
 * part 0: the fork's file (read-only unless write; the fork becomes
 * checksummed if it was not), DIRECT_CLOSE'd as DIRECT_OPEN's; part 1:
 * its CRC sidecar (read-write), for a connection holding part 0. */
#define GP_DIRECT_COPEN_REQ(F) F(u64, fkid) F(u8, write) F(u8, part)
#define GP_DIRECT_COPEN_REP(F) F(u64, base) F(u64, size)

#define GP_SCRUB_REQ(F) F(u64, fkid)
#define GP_SCRUB_REP(F) F(u64, chunks) F(u64, bad) F(u64, first_bad)
/* Replicated files (libgalley/repl.c): NS_REPL_SET stores rec's copies
 * (servers, headers, data-directory ids, states) in the record of name
 * only when rec's generation is above the stored one (else
 * GFS_ESTALEGEN: the caller reloads the record and decides again); the
 * reply is the generation stored after.  REPL_ID: the random id the
 * server's data directory got when it was first used; a directory wiped
 * and recreated gets a new one. */
#define GP_NS_REPL_SET_REQ(F) F(name, name, GFS_NAME_MAX) F(rec, rec)
#define GP_NS_REPL_SET_REP(F) F(u64, gen)

#define GP_REPL_ID_REQ(F)
#define GP_REPL_ID_REP(F) F(u64, dsid)

/* ------------------------------------------------------------- items ---- */

/* The elements of list fields: GP_ITEMS(Y) names them, GP_ITEM_name(F)
 * lists each one's fields (scalars and str only). */
#define GP_ITEMS(Y) Y(NAME) Y(FORK) Y(SUB) Y(LEASED) Y(SIZE)

#define GP_ITEM_NAME(F) F(str, name, GFS_NAME_MAX)
/* mtime: the fork's data file's modification time (ns since the epoch),
 * 0 while it has none (never written) */
#define GP_ITEM_FORK(F)                                                        \
    F(str, fork, GFS_FORK_NAME_MAX) F(u64, size) F(u64, mtime)
#define GP_ITEM_SUB(F)                                                         \
    F(u64, hid) F(str, file, GFS_NAME_MAX) F(u32, subfile) F(u8, deleted)
/* NS_LEASE_MANY's: 0, the lease, and the record after it; or a
 * positive errno */
#define GP_ITEM_LEASED(F) F(u32, err) F(u32, lease_ms)
/* FORK_SIZES's: 0 and the fork's size and mtime (as FORK's), or a
 * positive errno */
#define GP_ITEM_SIZE(F) F(u32, err) F(u64, size) F(u64, mtime)

#endif /* GMSG_H */
