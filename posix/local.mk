# libgalley-posix.so: the preload library behind `galley exec` (POSIX and
# stdio calls on galley: names go to Galley).  A shared module only: it is
# loaded with LD_PRELOAD, never linked against.
lib_LTLIBRARIES += posix/libgalley-posix.la
posix_libgalley_posix_la_SOURCES = posix/galley_posix.c
posix_libgalley_posix_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
posix_libgalley_posix_la_LIBADD = libgalley/libgalley.la -ldl
posix_libgalley_posix_la_LDFLAGS = -module -avoid-version -shared
