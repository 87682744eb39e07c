# common/: code every program shares that is not the wire protocol.
# gconfig: the GALLEY_* environment variables, read in one place.  A
# convenience library of its own, compiled with hidden visibility: it goes
# into libgproto (so libgalley, galleyd and the tools that link the
# protocol get it) and is linked on its own into the POSIX preload,
# galley-fuse and the galley tool, which link libgalley (whose symbols
# beyond the public API are private) and not the protocol library.
noinst_LTLIBRARIES += common/libgcommon.la
common_libgcommon_la_SOURCES = common/gconfig.c common/gconfig.h
common_libgcommon_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
