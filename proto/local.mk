# The wire protocol, compiled into both libgalley and galleyd.
noinst_LTLIBRARIES += proto/libgproto.la
proto_libgproto_la_SOURCES = proto/gproto.c proto/gproto.h
