# common/: code every program shares that is not the wire protocol, all
# compiled with hidden visibility.
#
# libgconfig: the GALLEY_* environment variables, read in one place
# (gconfig).  Linked on its own into the POSIX preload, galley-fuse and
# the galley tool, which link libgalley (whose symbols beyond the public
# API are private) and not the protocol library.
noinst_LTLIBRARIES += common/libgconfig.la
common_libgconfig_la_SOURCES = common/gconfig.c common/gconfig.h
common_libgconfig_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden

# libgcommon: libgconfig and the rest of common/, for libgproto (so
# libgalley, galleyd and the tools that link the protocol get it): the
# clocks (gclock.h), FNV-1a (fnv.h), CRC32C (crc32c), the polling policy
# (gspin), pieces to and from a descriptor (fdio), a checksummed fork's
# file and sidecar (csfile), the test-only fault switches (gfault.h).
# fdio and csfile move the pieces of proto/extent.h, whose functions the
# protocol library supplies.
noinst_LTLIBRARIES += common/libgcommon.la
common_libgcommon_la_SOURCES = common/gclock.h common/fnv.h \
	common/crc32c.c common/crc32c.h \
	common/gspin.c common/gspin.h \
	common/fdio.c common/fdio.h \
	common/csfile.c common/csfile.h \
	common/gfault.h
common_libgcommon_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
common_libgcommon_la_LIBADD = common/libgconfig.la
