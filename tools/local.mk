# The `galley` command-line tool (ping, ls, stat, rm, create, put, get, df,
# fork ...).  Uses only the public client API.
bin_PROGRAMS += tools/galley
tools_galley_SOURCES = tools/galley.c tools/fsck.c tools/galley_cli.h \
	tools/galley_util.c tools/galley_files.c tools/galley_servers.c \
	tools/galley_forks.c tools/galley_config.c
# The cluster-file reader of libgalley (private to it), compiled in too so
# that the addresses shown are the ones the library reads.
tools_galley_SOURCES += libgalley/cluster_file.c libgalley/cluster_file.h
tools_galley_LDADD = libgalley/libgalley.la common/libgconfig.la
tools_galley_SOURCES += tools/galley_exec.c tools/galley_exec.h \
	tools/galley_mount.c tools/galley_mount.h
tools_galley_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libgalley \
	-DGALLEY_LIBDIR='"$(libdir)"' \
	-DGALLEY_BINDIR='"$(bindir)"' -DGALLEY_HAVE_FUSE=$(GALLEY_HAVE_FUSE)

# galley-stage-worker: the data path of galley-stage (tools/galley-stage,
# the driver that plans, launches and verifies); the CRC32C of proto/.
bin_PROGRAMS += tools/galley-stage-worker
tools_galley_stage_worker_SOURCES = tools/galley_stage.c \
	tools/galley_stage_meta.c tools/galley_stage.h
tools_galley_stage_worker_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/proto
tools_galley_stage_worker_LDADD = libgalley/libgalley.la proto/libgproto.la -lpthread
