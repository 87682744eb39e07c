# The split-phase (GFS-GROUP) and SFIO papers' experiments, scaled down.
# Not installed; see bench/README.md ("splitphase and sfio_bench").
noinst_PROGRAMS += bench/splitphase bench/sfio_bench
bench_splitphase_SOURCES = bench/splitphase.c
bench_splitphase_LDADD = libgalley/libgalley.la -lm
bench_sfio_bench_SOURCES = bench/sfio_bench.c
bench_sfio_bench_LDADD = libgalley/libgalley.la -lm
