#!/bin/sh
# tsan-dstress.sh -- tests/test_direct.py's threads case (t_dstress: threads
# of one direct client opening, moving and closing one striped file) under
# ThreadSanitizer: libgalley, galleyd, galley and t_dstress built with
# -fsanitize=thread in a build directory of their own, then the case run
# RUNS times against servers of that build.  Not part of `make check`.
#
#   tests/helpers/tsan-dstress.sh [-d BUILDDIR] [-n RUNS]
#
#   -d BUILDDIR  where to build (default /tmp/galley-tsan); configured
#                once, made again on every call
#   -n RUNS      runs of the case (default 3)
#
# Every report goes to BUILDDIR/tsan-logs/r.<pid> (clients' and servers');
# exit 0 when every run passed and there is no report.
set -u

src=$(cd "$(dirname "$0")/../.." && pwd)
build=/tmp/galley-tsan runs=3
while getopts d:n: o; do
    case $o in
    d) build=$OPTARG ;;
    n) runs=$OPTARG ;;
    *)
        sed -n '8,12p' "$0" >&2
        exit 2
        ;;
    esac
done
[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi) || exit 1
mkdir -p "$build" || exit 1
cd "$build" || exit 1
if [ ! -f config.status ]; then
    "$src/configure" -q --without-mpicc --without-ompio \
        CFLAGS='-O1 -g -fsanitize=thread' LDFLAGS=-fsanitize=thread || exit 1
fi
make -j"${JOBS:-2}" libgalley/libgalley.la servers/galleyd tools/galley \
    tests/helpers/t_dstress >make.log 2>&1 || {
    tail -20 make.log >&2
    exit 1
}
logs=$build/tsan-logs
rm -rf "$logs"
mkdir -p "$logs"
ok=0
i=1
while [ "$i" -le "$runs" ]; do
    (cd "$src" && GALLEY_BUILD=$build TSAN_OPTIONS="log_path=$logs/r" \
        python3 -m pytest -q -p no:cacheprovider tests/test_direct.py \
        -k threads_open_move) >"$logs/pytest$i.log" 2>&1 &&
        ok=$((ok + 1))
    i=$((i + 1))
done
reports=$(cat "$logs"/r.* 2>/dev/null | grep -c 'WARNING: ThreadSanitizer')
echo "tsan-dstress: $runs runs, $ok passed, $reports ThreadSanitizer" \
    "report(s) (in $logs)"
[ "$ok" -eq "$runs" ] && [ "$reports" -eq 0 ]
