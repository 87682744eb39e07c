# galley-fuse: the FUSE daemon behind `galley mount` (built only when
# configure found libfuse3).
if HAVE_FUSE3
bin_PROGRAMS += fuse/galley-fuse
fuse_galley_fuse_SOURCES = fuse/galley_fuse.c fuse/gf_dir.c fuse/gf_internal.h \
	posix/px_rename.c \
	posix/px_rename.h posix/px_dirmark.c posix/px_dirmark.h \
	posix/px_fsinfo.c posix/px_fsinfo.h \
	libgalley/cluster_file.c libgalley/cluster_file.h
fuse_galley_fuse_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/posix \
	-I$(top_srcdir)/libgalley $(FUSE3_CFLAGS)
fuse_galley_fuse_LDADD = libgalley/libgalley.la common/libgconfig.la \
	$(FUSE3_LIBS)
endif
