# galleyd: the I/O server, one per I/O node.  One file per unit of the
# paper's I/O processor; see servers/gsrv_internal.h for the map.
# The units are a convenience library compiled once; the two that hold the
# test-only fault points (csum.c, io_read.c: common/gfault.h) are
# compiled into each program, without them for galleyd and with
# -DGALLEY_TEST_HOOKS for galleyd-test, the server the tests that set
# GALLEY_TEST_FLIP_WIRE, GALLEY_TEST_CRASH_AFTER_CRC or
# GALLEY_TEST_FORGET_OPENS start
# (tests/conftest.py: Cluster's test_hooks).  galleyd-test is not
# installed.
noinst_LTLIBRARIES += servers/libgsrv.la
servers_libgsrv_la_SOURCES = \
	servers/gsrv_internal.h \
	servers/gsrv_conn.h \
	servers/gsrv_stubs.h \
	servers/gsrv_meta.h \
	servers/gsrv_data.h \
	servers/htable.h \
	servers/htable.c \
	servers/galleyd.c \
	servers/gsrv_globals.c \
	servers/handler.c \
	servers/stubs.c \
	servers/ns_internal.h \
	servers/nameserver.c \
	servers/ns_lease.c \
	servers/ns_ops.c \
	servers/repl.c \
	servers/subfile_internal.h \
	servers/subfile.c \
	servers/subfile_disk.c \
	servers/subfile_ops.c \
	servers/counters.c \
	servers/io_internal.h \
	servers/io.c \
	servers/io_write.c \
	servers/write_cache.c \
	servers/write_splice.c \
	servers/write_bypass.c \
	servers/cache.c \
	servers/disk.c \
	servers/rangelock.c \
	servers/meta.c \
	servers/metatab.c \
	servers/wal.c \
	servers/cma.c \
	servers/direct.c \
	servers/iostats.c \
	servers/auth.c
GSRV_HOOKED = servers/csum.c servers/io_read.c

bin_PROGRAMS += servers/galleyd
servers_galleyd_SOURCES = $(GSRV_HOOKED)
servers_galleyd_LDADD = servers/libgsrv.la proto/libgproto.la -lpthread

noinst_PROGRAMS += servers/galleyd-test
servers_galleyd_test_SOURCES = $(GSRV_HOOKED)
servers_galleyd_test_CPPFLAGS = $(AM_CPPFLAGS) -DGALLEY_TEST_HOOKS
servers_galleyd_test_LDADD = $(servers_galleyd_LDADD)
