# arrays/ unit test of the pure parts (layout parsing, grid choice,
# ownership, schema encoding): plain cc, no MPI, run by `make check` and by
# arrays/tests/test_arrays.py from _build/arrays/t_layout.  The MPI parts
# of arrays/ are built by arrays/Makefile.am with our MPICH's mpicc.
noinst_PROGRAMS += arrays/t_layout
TESTS += arrays/t_layout
arrays_t_layout_SOURCES = arrays/tests/t_layout.c arrays/ga_error.c \
	arrays/ga_layout.c arrays/ga_schema.c arrays/ga_internal.h \
	include/galley_array.h proto/gerror.c
arrays_t_layout_CPPFLAGS = -DGA_NO_MPI -I$(top_srcdir)/include \
	-I$(top_srcdir)/arrays -I$(top_srcdir)/proto
