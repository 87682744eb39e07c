# libgalley: the client runtime (shared and static).  Only the public API
# (gfs_* and the SFIO layer's m* calls) is exported; everything else stays
# private to the library.
lib_LTLIBRARIES += libgalley/libgalley.la
include_HEADERS += include/galley.h include/galley_group.h include/galley_sfio.h

# The units are a convenience library compiled once; the two that hold the
# test-only fault points (io.c, transport_direct.c: common/gfault.h) are
# compiled into libgalley without them and, with -DGALLEY_TEST_HOOKS, into
# libgalley-test, the test build that tests/helpers/t_checksum links (the
# tests that set GALLEY_TEST_FLIP_WIRE or
# GALLEY_TEST_CLIENT_CRASH_AFTER_CRC run it).
noinst_LTLIBRARIES += libgalley/libgclient.la
libgalley_libgclient_la_SOURCES = \
	libgalley/internal.h libgalley/datapath.h \
	libgalley/client.c \
	libgalley/lifecycle.c \
	libgalley/calls.c \
	libgalley/cluster_file.h \
	libgalley/cluster_file.c \
	libgalley/conn.c libgalley/conn_internal.h libgalley/conn_connect.c \
	libgalley/frame.c \
	libgalley/dial.c \
	libgalley/dial.h \
	libgalley/transport.h libgalley/transport.c \
	libgalley/transport_tcp.c libgalley/transport_unix.c \
	libgalley/transport_cma.c \
	libgalley/transport_direct.h \
	libgalley/transport_direct_grants.c \
	libgalley/files.c libgalley/files_delete.c \
	libgalley/statahead.c \
	libgalley/rcache.c \
	libgalley/forks.c \
	libgalley/group.c \
	libgalley/route.c libgalley/route.h \
	libgalley/layout.c \
	libgalley/local_layout.c libgalley/local_io.c libgalley/local_create.c \
	libgalley/local_internal.h \
	libgalley/nb.c \
	libgalley/pieces.c \
	libgalley/sfio.c \
	libgalley/structured.c \
	libgalley/striped.c libgalley/striped_internal.h libgalley/nodes.c \
	libgalley/striped_io.c libgalley/striped_lock.c libgalley/striped_size.c \
	libgalley/repl.c libgalley/repl_internal.h \
	libgalley/repl_io.c libgalley/repl_repair.c \
	libgalley/auth.c \
	libgalley/lease.c \
	libgalley/fsck.c \
	libgalley/handle.h \
	libgalley/handle.c

GC_HOOKED = libgalley/io.c libgalley/transport_direct.c
libgalley_libgalley_la_SOURCES = $(GC_HOOKED)
libgalley_libgalley_la_LIBADD = libgalley/libgclient.la proto/libgproto.la
libgalley_libgalley_la_LDFLAGS = -version-info $(GALLEY_SO_VERSION) \
	-export-symbols-regex '^(gfs_|m(open|close|chsize|delete|create|read|write|readc|writec|readb|writeb|error|lasterror)$$)'

noinst_LTLIBRARIES += libgalley/libgalley-test.la
libgalley_libgalley_test_la_SOURCES = $(GC_HOOKED)
libgalley_libgalley_test_la_CPPFLAGS = $(AM_CPPFLAGS) -DGALLEY_TEST_HOOKS
libgalley_libgalley_test_la_LIBADD = $(libgalley_libgalley_la_LIBADD)
