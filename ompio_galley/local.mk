# ompio_galley: galley: files for Open MPI, as three OMPIO plug-ins built
# against the installed Open MPI's headers (configure finds them through
# mpicc.openmpi) and installed into $(libdir)/openmpi, where that Open MPI
# finds them through mca_base_component_path (./quickstart env --openmpi).
EXTRA_DIST += ompio_galley/README.md
if HAVE_OMPIO
ompiodir = $(libdir)/openmpi
ompio_LTLIBRARIES = ompio_galley/mca_fs_galley.la ompio_galley/mca_fbtl_galley.la \
	ompio_galley/mca_sharedfp_galley.la

# The MPI-driver core (adio_galley/galley_mpi_common.[ch]: lifecycle,
# atomic list I/O, error classes, layout hints) is shared with the ROMIO
# driver: each plug-in compiles its own copy.
OMPIO_GALLEY_COMMON = ompio_galley/ompio_galley.h ompio_galley/ompio_galley_common.c \
	adio_galley/galley_mpi_common.h adio_galley/galley_mpi_common.c
OMPIO_GALLEY_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/adio_galley $(OMPI_CPPFLAGS)
OMPIO_GALLEY_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
OMPIO_GALLEY_LDFLAGS = -module -shared -avoid-version -no-undefined \
	-L$(OMPI_LIBDIR) -Wl,-rpath,$(OMPI_LIBDIR)
OMPIO_GALLEY_LIBADD = libgalley/libgalley.la -lmca_common_ompio -lmpi -lopen-pal

ompio_galley_mca_fs_galley_la_SOURCES = ompio_galley/fs_galley.c $(OMPIO_GALLEY_COMMON)
ompio_galley_mca_fs_galley_la_CPPFLAGS = $(OMPIO_GALLEY_CPPFLAGS)
ompio_galley_mca_fs_galley_la_CFLAGS = $(OMPIO_GALLEY_CFLAGS)
ompio_galley_mca_fs_galley_la_LDFLAGS = $(OMPIO_GALLEY_LDFLAGS)
ompio_galley_mca_fs_galley_la_LIBADD = $(OMPIO_GALLEY_LIBADD)

ompio_galley_mca_fbtl_galley_la_SOURCES = ompio_galley/fbtl_galley.c $(OMPIO_GALLEY_COMMON)
ompio_galley_mca_fbtl_galley_la_CPPFLAGS = $(OMPIO_GALLEY_CPPFLAGS)
ompio_galley_mca_fbtl_galley_la_CFLAGS = $(OMPIO_GALLEY_CFLAGS)
ompio_galley_mca_fbtl_galley_la_LDFLAGS = $(OMPIO_GALLEY_LDFLAGS)
ompio_galley_mca_fbtl_galley_la_LIBADD = $(OMPIO_GALLEY_LIBADD)

ompio_galley_mca_sharedfp_galley_la_SOURCES = ompio_galley/sharedfp_galley.c \
	$(OMPIO_GALLEY_COMMON)
ompio_galley_mca_sharedfp_galley_la_CPPFLAGS = $(OMPIO_GALLEY_CPPFLAGS)
ompio_galley_mca_sharedfp_galley_la_CFLAGS = $(OMPIO_GALLEY_CFLAGS)
ompio_galley_mca_sharedfp_galley_la_LDFLAGS = $(OMPIO_GALLEY_LDFLAGS)
ompio_galley_mca_sharedfp_galley_la_LIBADD = $(OMPIO_GALLEY_LIBADD)

# Open MPI loads every mca_* file of the directory: keep only the modules.
install-data-hook: ompio-galley-drop-la
ompio-galley-drop-la:
	rm -f $(DESTDIR)$(ompiodir)/mca_*_galley.la $(DESTDIR)$(ompiodir)/mca_*_galley.a
.PHONY: ompio-galley-drop-la
endif
