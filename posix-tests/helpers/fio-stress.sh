#!/bin/sh
# fio-stress.sh -- fio's threads on one shared file through `galley exec`
# (the LD_PRELOAD library, the direct transport on this host), run after
# run, each checked: fio's exit status, its verify errors, and
# `galley fsck` afterwards.  Threads of one process then open, read,
# write and close the forks of one file at once (transport_direct.c's
# grants shared between them).
#
#   posix-tests/helpers/fio-stress.sh [-n RUNS] [-s SIZE] [-j JOBS]
#                                      [-d DIR] [-k]
#
#   -n RUNS   runs (default 100)
#   -s SIZE   bytes per fio job (default 64M; fio's suffixes)
#   -j JOBS   fio threads (default 4), each at its own offset
#   -d DIR    the cluster's directory (default: a new one under $TMPDIR,
#             removed at the end unless -k)
#   -k        keep DIR and every run's output
#
# Programs come from the build tree ($GALLEY_BUILD, default _build/):
# servers/galleyd, tools/galley (whose `exec` finds posix/.libs/).  Four
# servers are started with tools/galley-cluster and stopped at the end.
# Prints one line per run and a summary; exit 0 when every run passed.
set -u

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${GALLEY_BUILD:-$here/_build}
runs=100 size=64M jobs=4 dir= keep=0
while getopts n:s:j:d:k o; do
    case $o in
    n) runs=$OPTARG ;;
    s) size=$OPTARG ;;
    j) jobs=$OPTARG ;;
    d) dir=$OPTARG ;;
    k) keep=1 ;;
    *)
        sed -n '9,15p' "$0" >&2
        exit 2
        ;;
    esac
done
command -v fio >/dev/null || {
    echo "fio-stress: fio not found (apt-get install fio)" >&2
    exit 2
}
galley=$build/tools/galley
[ -x "$galley" ] && [ -x "$build/servers/galleyd" ] || {
    echo "fio-stress: no build in $build (./quickstart build, or set" \
        "GALLEY_BUILD)" >&2
    exit 2
}
[ -n "$dir" ] || dir=$(mktemp -d "${TMPDIR:-/tmp}/fio-stress.XXXXXX")
mkdir -p "$dir"
cluster() {
    GALLEYD=$build/servers/galleyd python3 "$here/tools/galley-cluster" \
        "$@" --dir "$dir/cluster"
}
cluster start -n 4 --no-resync >"$dir/cluster.log" 2>&1 || {
    echo "fio-stress: the servers did not start:" >&2
    cat "$dir/cluster.log" >&2
    exit 1
}
g() { GALLEY_TIMEOUT=30 "$galley" -c "$dir/cluster/cluster" "$@"; }

pass=0 crash=0 failed=0 verify=0 fsck=0
i=1
while [ "$i" -le "$runs" ]; do
    out=$dir/run$i.out
    g exec -m /gfio=/fio$i -- fio --name=x --rw=randrw --bs=4k \
        --size="$size" --numjobs="$jobs" --offset_increment="$size" \
        --pre_read=1 --filename=/gfio/x --ioengine=psync --thread \
        --invalidate=0 --verify=crc32c --do_verify=1 --fallocate=none \
        --verify_state_save=0 \
        >"$out" 2>&1
    rc=$?
    # a verify error: fio's "verify: bad header/magic/crc32c" lines
    nv=$(grep -ci 'verify: bad\|bad magic\|crc32c: verify failed' "$out")
    g fsck >"$out.fsck" 2>&1
    frc=$?
    g rm /fio$i/x >/dev/null 2>&1 # keeps the servers' disks small
    what=ok
    if [ "$rc" -gt 128 ]; then
        what="signal $((rc - 128))"
        crash=$((crash + 1))
    elif [ "$rc" -ne 0 ]; then
        what="exit $rc"
        failed=$((failed + 1))
    fi
    [ "$nv" -eq 0 ] || verify=$((verify + 1))
    [ "$frc" -eq 0 ] || fsck=$((fsck + 1))
    if [ "$what" = ok ] && [ "$nv" -eq 0 ] && [ "$frc" -eq 0 ]; then
        pass=$((pass + 1))
        [ "$keep" = 1 ] || rm -f "$out" "$out.fsck"
    fi
    echo "run $i: $what, $nv verify error line(s), fsck exit $frc"
    i=$((i + 1))
done
cluster stop >>"$dir/cluster.log" 2>&1
echo "fio-stress: $runs runs: $pass passed, $crash killed by a signal," \
    "$failed other failures, $verify with verify errors, $fsck with fsck" \
    "findings (outputs of failed runs in $dir)"
if [ "$pass" -eq "$runs" ] && [ "$keep" = 0 ]; then
    rm -rf "$dir"
fi
[ "$pass" -eq "$runs" ]
