# C unit tests that need no servers; `make check` runs them.
#   test_proto   round trips and rejections for every gproto.c codec
#   test_seg     data-request segments: codec, measure, expansion order
#   test_layout  striped-layout arithmetic against a byte-by-byte model
#   test_extent  the extent module (proto/extent.c: sort, merge, overlaps,
#                stride folding) and the striping arithmetic (proto/layout.h)
#   test_cma     galleyd's cross-memory copies (servers/cma.c): `mem` lists
#                and every position of a strided stream, on this process
#   fuzz_proto   the protocol fuzz target driven by generated inputs
#                (GALLEY_FUZZ_ITERS, GALLEY_FUZZ_SEED; see the file to build
#                it as a libFuzzer target instead)
#   fuzz_proto_asan  the same target built with AddressSanitizer and
#                UndefinedBehaviorSanitizer (any finding aborts), over 50000
#                inputs unless GALLEY_FUZZ_ITERS says otherwise
UNIT_TESTS = tests/unit/test_proto tests/unit/test_seg tests/unit/test_layout \
	tests/unit/test_extent tests/unit/test_cma tests/unit/fuzz_proto tests/unit/fuzz_proto_asan
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)

tests_unit_test_proto_SOURCES = tests/unit/test_proto.c tests/unit/utest.h
tests_unit_test_proto_LDADD = proto/libgproto.la

tests_unit_test_seg_SOURCES = tests/unit/test_seg.c tests/unit/utest.h
tests_unit_test_seg_LDADD = proto/libgproto.la

tests_unit_test_layout_SOURCES = tests/unit/test_layout.c tests/unit/utest.h
tests_unit_test_layout_LDADD = libgalley/libgalley.la

tests_unit_test_extent_SOURCES = tests/unit/test_extent.c tests/unit/utest.h
tests_unit_test_extent_LDADD = proto/libgproto.la

tests_unit_test_cma_SOURCES = tests/unit/test_cma.c tests/unit/utest.h \
	servers/cma.c
tests_unit_test_cma_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/servers
tests_unit_test_cma_LDADD = proto/libgproto.la

# test_handle  the client's id table (libgalley/handle.c) on its own:
#              stale and wrong-kind ids refused, slot reuse, growth, threads
check_PROGRAMS += tests/unit/test_handle
TESTS += tests/unit/test_handle
tests_unit_test_handle_SOURCES = tests/unit/test_handle.c tests/unit/utest.h \
	libgalley/handle.c libgalley/handle.h
tests_unit_test_handle_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libgalley
tests_unit_test_handle_LDADD = -lpthread

tests_unit_fuzz_proto_SOURCES = tests/unit/fuzz_proto.c
tests_unit_fuzz_proto_LDADD = proto/libgproto.la

SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
tests_unit_fuzz_proto_asan_SOURCES = tests/unit/fuzz_proto.c proto/gproto.c \
	proto/extent.c
tests_unit_fuzz_proto_asan_CFLAGS = $(AM_CFLAGS) -g -O1 $(SANITIZE) \
	-DGALLEY_FUZZ_DEFAULT_ITERS=50000
tests_unit_fuzz_proto_asan_LDFLAGS = $(SANITIZE)

# test_htable: galleyd's one hash table (servers/htable.c) against an array
# model, without a server.
check_PROGRAMS += tests/unit/test_htable
TESTS += tests/unit/test_htable
tests_unit_test_htable_SOURCES = tests/unit/test_htable.c tests/unit/utest.h \
	servers/htable.c servers/htable.h
tests_unit_test_htable_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/servers

# test_send: the one send loop (proto/gsend.c) over a socketpair: short
# writes, EINTR, EAGAIN, EPIPE, more than IOV_MAX entries.
check_PROGRAMS += tests/unit/test_send
TESTS += tests/unit/test_send
tests_unit_test_send_SOURCES = tests/unit/test_send.c tests/unit/utest.h
tests_unit_test_send_LDADD = proto/libgproto.la -lpthread

# test_msg     every message of proto/gmsg.h, both directions, by iterating
#              the table: round trips, truncation at every byte, limits,
#              wire bytes.  fuzz_msg.c adds the same messages to the fuzz
#              target (MODE_MESSAGE: every decoder, random and mutated).
check_PROGRAMS += tests/unit/test_msg
TESTS += tests/unit/test_msg
tests_unit_test_msg_SOURCES = tests/unit/test_msg.c tests/unit/msg_sample.h \
	tests/unit/utest.h
tests_unit_test_msg_LDADD = proto/libgproto.la
tests_unit_fuzz_proto_SOURCES += tests/unit/fuzz_msg.c tests/unit/msg_sample.h
tests_unit_fuzz_proto_asan_SOURCES += tests/unit/fuzz_msg.c \
	tests/unit/msg_sample.h proto/gcodec.c

# test_crc32c  common/crc32c.c: the check value, hardware and table paths
#              agree, continuation over pieces and iovecs
check_PROGRAMS += tests/unit/test_crc32c
TESTS += tests/unit/test_crc32c
tests_unit_test_crc32c_SOURCES = tests/unit/test_crc32c.c tests/unit/utest.h
tests_unit_test_crc32c_LDADD = proto/libgproto.la

# test_spin    common/gspin.c, the polling policy of both sides: refused on a
#              host this test oversubscribes with busy children
check_PROGRAMS += tests/unit/test_spin
TESTS += tests/unit/test_spin
tests_unit_test_spin_SOURCES = tests/unit/test_spin.c tests/unit/utest.h
tests_unit_test_spin_LDADD = proto/libgproto.la

# test_fdio    common/fdio.c, the direct path's data mover, against a byte
#              model: gaps bridged by sieved reads or not, overlaps, the
#              end of the file, plain and locked (sieved) writes
check_PROGRAMS += tests/unit/test_fdio
TESTS += tests/unit/test_fdio
tests_unit_test_fdio_SOURCES = tests/unit/test_fdio.c tests/unit/utest.h
tests_unit_test_fdio_LDADD = proto/libgproto.la
