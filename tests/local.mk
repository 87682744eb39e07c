# Test programs driven by the pytest suite (tests/test_*.py): each is a
# focused scenario against a real cluster that prints what it saw and exits
# 0 only when every check held.  Built by a plain `make` (noinst) so that
# `python3 -m pytest tests/` works right after a build.
TEST_HELPERS = tests/helpers/t_filemodel tests/helpers/t_listio \
	tests/helpers/t_errors tests/helpers/t_striped tests/helpers/t_failover \
	tests/helpers/t_structured tests/helpers/t_local tests/helpers/t_checksum \
	tests/helpers/t_mdstorm tests/helpers/t_repl tests/helpers/t_fulldisk \
	tests/helpers/t_dstress
noinst_PROGRAMS += $(TEST_HELPERS)

tests_helpers_t_filemodel_SOURCES = tests/helpers/t_filemodel.c tests/helpers/thelp.h
tests_helpers_t_filemodel_LDADD = libgalley/libgalley.la
tests_helpers_t_listio_SOURCES = tests/helpers/t_listio.c tests/helpers/thelp.h
tests_helpers_t_listio_LDADD = libgalley/libgalley.la
tests_helpers_t_errors_SOURCES = tests/helpers/t_errors.c tests/helpers/thelp.h
tests_helpers_t_errors_LDADD = libgalley/libgalley.la
tests_helpers_t_striped_SOURCES = tests/helpers/t_striped.c tests/helpers/thelp.h
tests_helpers_t_striped_LDADD = libgalley/libgalley.la
tests_helpers_t_failover_SOURCES = tests/helpers/t_failover.c tests/helpers/thelp.h
tests_helpers_t_failover_LDADD = libgalley/libgalley.la
tests_helpers_t_structured_SOURCES = tests/helpers/t_structured.c tests/helpers/thelp.h
tests_helpers_t_structured_LDADD = libgalley/libgalley.la
tests_helpers_t_local_SOURCES = tests/helpers/t_local.c tests/helpers/thelp.h
tests_helpers_t_local_LDADD = libgalley/libgalley.la
tests_helpers_t_checksum_SOURCES = tests/helpers/t_checksum.c tests/helpers/thelp.h
# t_checksum links the test build of libgalley (libgalley/local.mk): the
# client's test-only fault points (GALLEY_TEST_FLIP_WIRE,
# GALLEY_TEST_CLIENT_CRASH_AFTER_CRC) are there.
tests_helpers_t_checksum_LDADD = libgalley/libgalley-test.la
tests_helpers_t_mdstorm_SOURCES = tests/helpers/t_mdstorm.c tests/helpers/thelp.h
tests_helpers_t_mdstorm_LDADD = libgalley/libgalley.la
tests_helpers_t_repl_SOURCES = tests/helpers/t_repl.c tests/helpers/thelp.h
tests_helpers_t_repl_LDADD = libgalley/libgalley.la -lpthread
tests_helpers_t_fulldisk_SOURCES = tests/helpers/t_fulldisk.c tests/helpers/thelp.h
tests_helpers_t_fulldisk_LDADD = libgalley/libgalley.la
tests_helpers_t_dstress_SOURCES = tests/helpers/t_dstress.c tests/helpers/thelp.h
tests_helpers_t_dstress_LDADD = libgalley/libgalley.la -lpthread
EXTRA_DIST += tests/helpers/tsan-dstress.sh

# t_ids: closed and wrong-kind ids of every kind (tests/test_ids.py); it
# reads the id format of libgalley/handle.h to know when a slot is reused.
noinst_PROGRAMS += tests/helpers/t_ids
tests_helpers_t_ids_SOURCES = tests/helpers/t_ids.c tests/helpers/thelp.h
tests_helpers_t_ids_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libgalley
tests_helpers_t_ids_LDADD = libgalley/libgalley.la
EXTRA_DIST += tests/test_ids.py

EXTRA_DIST += tests/conftest.py tests/test_cluster_script.py \
	tests/test_cli.py tests/test_filemodel.py tests/test_listio.py \
	tests/test_striped.py tests/test_errors.py tests/test_failures.py \
	tests/test_protocol.py tests/test_structured.py tests/test_hardening.py \
	tests/test_local_layout.py tests/test_checksum.py \
	tests/test_metadata.py tests/test_repl.py tests/test_fulldisk.py
EXTRA_DIST += tests/test_stage.py
