# libgalley-posix.so: the preload library behind `galley exec` (POSIX and
# stdio calls on galley: names go to Galley).  A shared module only: it is
# loaded with LD_PRELOAD, never linked against.
lib_LTLIBRARIES += posix/libgalley-posix.la
posix_libgalley_posix_la_SOURCES = posix/galley_posix.c posix/px_path.c \
	posix/px_open.c posix/px_lock.c posix/px_data.c posix/px_copy.c \
	posix/px_names.c posix/px_attr.c posix/px_dir.c posix/px_sys.c \
	posix/px_stdio.c posix/px_fs.c posix/px_internal.h posix/px_rename.c \
	posix/px_inherit.c posix/px_link.c posix/px_mmap.c \
	posix/px_rename.h posix/px_dirmark.c posix/px_dirmark.h \
	posix/px_fsinfo.c posix/px_fsinfo.h
posix_libgalley_posix_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
posix_libgalley_posix_la_LIBADD = libgalley/libgalley.la \
	common/libgconfig.la -ldl
posix_libgalley_posix_la_LDFLAGS = -module -avoid-version -shared

# The POSIX test program posix-tests/ runs under `galley exec` (an ordinary
# program: it does not link libgalley).
noinst_PROGRAMS += posix-tests/helpers/t_posix
posix_tests_helpers_t_posix_SOURCES = posix-tests/helpers/t_posix.c
# Every descriptor call of glibc's that moves data, on a Galley descriptor
# (posix-tests/test_entry_points.py).
noinst_PROGRAMS += posix-tests/helpers/t_entry
posix_tests_helpers_t_entry_SOURCES = posix-tests/helpers/t_entry.c
# Random operations checked against a model of the file, fsx-style
# (posix-tests/test_fsx.py).
noinst_PROGRAMS += posix-tests/helpers/t_fsx
posix_tests_helpers_t_fsx_SOURCES = posix-tests/helpers/t_fsx.c
# Lock semantics as a transcript, compared between libc and the preload.
noinst_PROGRAMS += posix-tests/helpers/t_locks
posix_tests_helpers_t_locks_SOURCES = posix-tests/helpers/t_locks.c
EXTRA_DIST += posix-tests/conftest.py posix-tests/test_posix.py \
	posix-tests/test_locks.py posix-tests/test_entry_points.py \
	posix-tests/test_fsx.py \
	posix-tests/helpers/mpi_records.c \
	posix-tests/test_posix_hdf5.py posix-tests/test_mount.py \
	posix-tests/test_mount_dirs.py \
	posix-tests/README.md posix-tests/test_threads.py \
	posix-tests/helpers/fio-stress.sh
