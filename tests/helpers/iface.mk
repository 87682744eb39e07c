# Interface tests (tests/test_interfaces.py): byte-exact checks of every
# data interface, non-blocking completion, GFS-GROUP flush rules and the
# SFIO layer, each a helper program run against real servers.  Built by a
# plain `make` (noinst), like the helpers of tests/local.mk.
IFACE_HELPERS = tests/helpers/t_iface_io tests/helpers/t_iface_nb \
	tests/helpers/t_iface_group tests/helpers/t_iface_sfio
noinst_PROGRAMS += $(IFACE_HELPERS)

tests_helpers_t_iface_io_SOURCES = tests/helpers/t_iface_io.c tests/helpers/thelp.h \
	tests/helpers/t_iface_model.h
tests_helpers_t_iface_io_LDADD = libgalley/libgalley.la
tests_helpers_t_iface_nb_SOURCES = tests/helpers/t_iface_nb.c tests/helpers/thelp.h
tests_helpers_t_iface_nb_LDADD = libgalley/libgalley.la -lpthread
tests_helpers_t_iface_group_SOURCES = tests/helpers/t_iface_group.c tests/helpers/thelp.h
tests_helpers_t_iface_group_LDADD = libgalley/libgalley.la
tests_helpers_t_iface_sfio_SOURCES = tests/helpers/t_iface_sfio.c tests/helpers/thelp.h
tests_helpers_t_iface_sfio_LDADD = libgalley/libgalley.la

EXTRA_DIST += tests/test_interfaces.py
