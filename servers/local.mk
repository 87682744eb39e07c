# galleyd: the I/O server, one per I/O node.  One file per unit of the
# paper's I/O processor; see servers/gsrv_internal.h for the map.
bin_PROGRAMS += servers/galleyd
servers_galleyd_SOURCES = \
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
	servers/io_read.c \
	servers/io_write.c \
	servers/write_cache.c \
	servers/write_splice.c \
	servers/write_bypass.c \
	servers/cache.c \
	servers/csum.c \
	servers/disk.c \
	servers/rangelock.c \
	servers/meta.c \
	servers/metatab.c \
	servers/wal.c \
	servers/cma.c \
	servers/direct.c \
	servers/iostats.c \
	servers/auth.c
servers_galleyd_LDADD = proto/libgproto.la -lpthread
