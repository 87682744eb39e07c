# libgalley: the client runtime (shared and static).  Only gfs_* symbols
# are exported; everything else stays private to the library.
lib_LTLIBRARIES += libgalley/libgalley.la
include_HEADERS += include/galley.h
libgalley_libgalley_la_SOURCES = \
	libgalley/internal.h \
	libgalley/client.c \
	libgalley/conn.c \
	libgalley/files.c \
	libgalley/forks.c \
	libgalley/io.c \
	libgalley/layout.c \
	libgalley/striped.c

libgalley_libgalley_la_LIBADD = proto/libgproto.la
libgalley_libgalley_la_LDFLAGS = -version-info $(GALLEY_SO_VERSION) \
	-export-symbols-regex '^gfs_'
