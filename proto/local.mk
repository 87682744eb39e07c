# The wire protocol, compiled into both libgalley and galleyd.
noinst_LTLIBRARIES += proto/libgproto.la
proto_libgproto_la_SOURCES = proto/gproto.c proto/gproto.h \
	proto/extent.c proto/extent.h proto/layout.h \
	proto/gauth.c proto/gauth.h \
	proto/gerror.c proto/gerror.h
# the cluster secret's MAC and random numbers come from libsodium; the
# GALLEY_* variables, clocks, CRC32C and the other shared code not of the
# protocol from common/ (common/local.mk)
proto_libgproto_la_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
proto_libgproto_la_LIBADD = $(SODIUM_LIBS) common/libgcommon.la

# The Python tests' constants are generated from the headers and checked in;
# `make check` fails while they are out of date.
TESTS += proto/check-pyconst
EXTRA_DIST += proto/check-pyconst proto/gen_pyconst.py tests/gproto_const.py

# the one send loop (gp_send_all, gp_write_all), for both sides too
proto_libgproto_la_SOURCES += proto/gsend.c proto/gsend.h

# Every message's fields, once (gmsg.h), and the codecs made from it.
proto_libgproto_la_SOURCES += proto/gmsg.h proto/gcodec.c proto/gcodec.h
