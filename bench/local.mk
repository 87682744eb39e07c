# gbench: list I/O versus one call per piece, side by side in one run.
# Not installed; see bench/README.md for how to run it against a cluster.
noinst_PROGRAMS += bench/gbench
bench_gbench_SOURCES = bench/gbench.c
bench_gbench_LDADD = libgalley/libgalley.la
EXTRA_DIST += bench/README.md

# latency: one small request's round trip beside a local pwrite/pread.
noinst_PROGRAMS += bench/latency
bench_latency_SOURCES = bench/latency.c bench/bench_stats.h
bench_latency_LDADD = libgalley/libgalley.la

# stream: large calls to a server on another host beside a plain TCP
# stream between the same hosts (bench/README.md, remote clients).
noinst_PROGRAMS += bench/stream
bench_stream_SOURCES = bench/stream.c bench/bench_stats.h
bench_stream_LDADD = libgalley/libgalley.la

# mdbench: metadata operations per second beside a local directory.
noinst_PROGRAMS += bench/mdbench
bench_mdbench_SOURCES = bench/mdbench.c bench/bench_stats.h
bench_mdbench_LDADD = libgalley/libgalley.la
EXTRA_DIST += bench/run-mdbench

# csumbench: checksummed beside plain calls, one client, no MPI.
noinst_PROGRAMS += bench/csumbench
bench_csumbench_SOURCES = bench/csumbench.c bench/bench_stats.h
bench_csumbench_LDADD = libgalley/libgalley.la
EXTRA_DIST += bench/stage/run-stage-bench bench/stage/README.md
