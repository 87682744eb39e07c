#!/usr/bin/env bash
#
# build-hdf5-testpar.sh -- build (once) HDF5's parallel test programs
# (testpar/) from Debian's HDF5 source against our MPICH, the one whose
# ROMIO contains the Galley driver.
#
#   hdf5-tests/build-hdf5-testpar.sh [--mpich-prefix M] [--galley-prefix P]
#                                    build, or return at once if built
#   hdf5-tests/build-hdf5-testpar.sh --print-prefix   where the programs are
#   hdf5-tests/build-hdf5-testpar.sh --print-key      the cache key only
#   hdf5-tests/build-hdf5-testpar.sh --deps-only      only install the Debian
#                                    packages hdf5-tests needs
#
# M defaults to `mpich/build-mpich.sh --print-prefix`, P (the Galley install
# prefix: libgalley.so.0, which libmpi.so.12 needs) to <repo>/_prefix; when
# P/lib has no libgalley.so.0 it must be found through LD_LIBRARY_PATH.
#
# Source: Debian's "hdf5" source package (apt-get source; deb-src entries are
# enabled the way mpich/build-mpich.sh does it if apt has none).  Configured
# with CC=M/bin/mpicc --enable-parallel, C only, static library (so the test
# programs are plain executables, no libtool wrappers); only src/, the test
# support library test/libh5test.la and the testpar/ programs are built.
#
# Cache (outside the clone): ${GALLEY_CACHE:-$HOME/.cache/galley}
#   src/hdf5-<debver>/        pristine Debian source, downloaded once
#   src/hdf5.version          Debian version that src/ holds (pins the key)
#   hdf5-<key>/build/         configured and built tree (out of the source)
#   hdf5-<key>/bin/           the testpar programs (t_mpi, testphdf5, ...)
#   hdf5-<key>/bin/PROGRAMS   their names, in the order `make check` runs them
#   hdf5-<key>/logs/          configure/make logs
#   hdf5-<key>/stamps/        one stamp per completed step
# <key> = short sha256 of this script and tools/debian-source.sh (comment and
# blank lines left out) and the HDF5 Debian version.  MPICH is not in the
# key: the programs use only MPICH's stable ABI (libmpi.so.12) and are run
# with LD_LIBRARY_PATH pointing at the MPICH of the day; the MPICH prefix
# used for the build is recorded in hdf5-<key>/stamps/mpich.
#
# Every step leaves its stamp only once it has completed, so the script can be
# interrupted and re-run; concurrent runs wait on a lock.  About 3.5 minutes
# on 2 cores.  Environment: GALLEY_CACHE, GALLEY_HDF5_JOBS (make -j, default
# 2), GALLEY_HDF5_VERSION (Debian version of hdf5 to use instead of apt's).

set -euo pipefail

# Debian 12's hdf5; used by --print-prefix/--print-key only when neither the
# cache nor apt can tell the version.
DEFAULT_HDF5_VERSION=1.10.8+repack1-1

CONFIGURE_OPTS=(
    --enable-parallel
    --disable-fortran
    --disable-cxx
    --disable-java
    --disable-hl
    --disable-tools
    --enable-tests
    --disable-shared
    --enable-static
    --enable-build-mode=production
    --with-zlib            # deflate: t_filters_parallel, fltread, cmpdsetr
    --without-szlib
)

# dpkg-dev for apt-get source; zlib1g-dev for the deflate filter tests;
# Debian's parallel HDF5 (linked to MPICH) and the h5dump/h5diff tools for
# hdf5-tests' own programs (checked on every run, installed if missing).
APT_PACKAGES=(build-essential dpkg-dev zlib1g-dev xz-utils
              libhdf5-mpich-dev hdf5-tools)

SCRIPT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
REPO_DIR=$(cd "$(dirname "$SCRIPT")/.." && pwd)
CACHE=${GALLEY_CACHE:-$HOME/.cache/galley}
JOBS=${GALLEY_HDF5_JOBS:-2}

log() { printf 'build-hdf5-testpar: %s\n' "$*" >&2; }
die() { printf 'build-hdf5-testpar: error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '3,16p' "$SCRIPT" | sed 's/^# \{0,1\}//'; }

# ---------------------------------------------------------------- arguments
MODE=build
MPICH_PREFIX=
GALLEY_PREFIX=
while [ $# -gt 0 ]; do
    case "$1" in
        --mpich-prefix) [ $# -ge 2 ] || die "--mpich-prefix needs a directory"
                        MPICH_PREFIX=$2; shift 2 ;;
        --mpich-prefix=*) MPICH_PREFIX=${1#*=}; shift ;;
        --galley-prefix) [ $# -ge 2 ] || die "--galley-prefix needs a directory"
                         GALLEY_PREFIX=$2; shift 2 ;;
        --galley-prefix=*) GALLEY_PREFIX=${1#*=}; shift ;;
        --print-prefix) MODE=print-prefix; shift ;;
        --print-key) MODE=print-key; shift ;;
        --deps-only) MODE=deps-only; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

# ---------------------------------------------------------------- apt
LIB=$REPO_DIR/tools/debian-source.sh
# shellcheck source=SCRIPTDIR/../tools/debian-source.sh
. "$LIB"

# ---------------------------------------------------------------- version/key
hdf5_version() {
    if [ -n "${GALLEY_HDF5_VERSION:-}" ]; then
        echo "$GALLEY_HDF5_VERSION"; return
    fi
    debian_version hdf5 libhdf5-dev "$DEFAULT_HDF5_VERSION"
}

HDF5_VERSION=$(hdf5_version)
KEY=$({ echo "hdf5=$HDF5_VERSION"; grep -hv -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$SCRIPT" "$LIB"; } |
    sha256sum | cut -c1-12)
SRC=$CACHE/src/hdf5-$HDF5_VERSION
TOP=$CACHE/hdf5-$KEY
BUILD=$TOP/build
BIN=$TOP/bin
LOGS=$TOP/logs
STAMPS=$TOP/stamps

case "$MODE" in
    print-prefix) echo "$TOP"; exit 0 ;;
    print-key) echo "$KEY"; exit 0 ;;
esac


# The testpar programs, in the order HDF5's `make check` runs them (the
# TEST_PROG_PARA list, then the t_pflush1/t_pflush2 pair of testpflush.sh).
testpar_programs() {
    local progs
    progs=$(sed -n 's/^TEST_PROG_PARA *= *//p' "$SRC/testpar/Makefile.am")
    [ -n "$progs" ] || die "no TEST_PROG_PARA in $SRC/testpar/Makefile.am"
    # shellcheck disable=SC2086  # program names are words
    printf '%s\n' $progs t_pflush1 t_pflush2
}

# Programs of ours made from testpar sources (see build_filters_mpiio);
# installed beside the testpar programs, not listed in bin/PROGRAMS.
EXTRA_PROGRAMS="t_filters_parallel_mpiio"

# ---------------------------------------------------------------- steps
fetch_source() {
    fetch_debian_source hdf5 "$HDF5_VERSION" "$SRC"
    [ -d "$SRC/testpar" ] || die "$SRC has no testpar/"
}

configure_tree() {
    has_stamp configured && return 0
    log "configuring (log: $LOGS/configure.log)"
    rm -rf "$BUILD"
    mkdir -p "$BUILD"
    # Debian's patches touch configure.ac and Makefile.am files, but HDF5
    # uses AM_MAINTAINER_MODE([disable]): the shipped configure is used as
    # it is and nothing is regenerated.
    # shellcheck disable=SC2016  # $1/$@ expand in the inner shell
    run_logged configure sh -c 'cd "$1" && shift && exec "$@"' sh "$BUILD" \
        "$SRC/configure" CC="$MPICH_PREFIX/bin/mpicc" "${CONFIGURE_OPTS[@]}"
    grep -q '^#define H5_HAVE_PARALLEL 1' "$BUILD/src/H5pubconf.h" ||
        die "configure did not enable parallel HDF5 (see $LOGS/configure.log)"
    stamp configured "$MPICH_PREFIX"
}

build_tree() {
    has_stamp built && return 0
    log "building the library, libh5test and testpar with make -j$JOBS (log: $LOGS/make.log)"
    local progs
    progs=$(testpar_programs | tr '\n' ' ')
    # shellcheck disable=SC2086  # program names are words
    run_logged make sh -c "make -C '$BUILD/src' -j$JOBS &&
        make -C '$BUILD/test' -j$JOBS libh5test.la &&
        make -C '$BUILD/testpar' -j$JOBS $progs"
    build_filters_mpiio
    stamp built
}

# t_filters_parallel_mpiio: t_filters_parallel.c with its test table cut to
# the tests that use the file only through MPI-IO (the 15 parallel write
# tests and the shrinking/growing chunks test).  Its read tests and the
# serial/parallel pair have rank 0 create or read the file serially with
# HDF5's POSIX (sec2) driver by the name given to MPI-IO, which no
# non-POSIX store can serve; the rest of the source is HDF5's, unchanged.
# Built with testpar's own Makefile rules (compile and libtool link).
build_filters_mpiio() {
    local src=$SRC/testpar/t_filters_parallel.c
    local dst=$BUILD/testpar/t_filters_parallel_mpiio.c
    awk '
        /^static void \(\*tests\[\]\)\(void\) = \{/ { intable = 1 }
        intable && /^};/ { intable = 0 }
        intable && /^[[:space:]]*(test_read_[a-z0-9_]*|test_write_serial_read_parallel|test_write_parallel_read_serial),[[:space:]]*$/ {
            cut++; next
        }
        { print }
        END { print "/* galley: " cut " serial-I/O tests cut from the table */" }
    ' "$src" >"$dst.tmp"
    # HDF5 1.10.8 lists 15 read tests and the serial/parallel pair
    grep -q '^/\* galley: 17 serial-I/O tests cut' "$dst.tmp" ||
        die "unexpected test table in $src: $(tail -n 1 "$dst.tmp")"
    mv "$dst.tmp" "$dst"
    cat >"$BUILD/testpar/galley-extra.mk" <<'MK'
include Makefile
t_filters_parallel_mpiio$(EXEEXT): t_filters_parallel_mpiio.$(OBJEXT) $(t_filters_parallel_DEPENDENCIES)
	@rm -f $@
	$(AM_V_CCLD)$(LINK) t_filters_parallel_mpiio.$(OBJEXT) $(LDADD) $(LIBS)
MK
    run_logged make-filters-mpiio make -C "$BUILD/testpar" -f galley-extra.mk \
        t_filters_parallel_mpiio
}

install_programs() {
    has_stamp installed && return 0
    local p
    rm -rf "$BIN"
    mkdir -p "$BIN.tmp"
    for p in $(testpar_programs); do
        [ -x "$BUILD/testpar/$p" ] || die "$BUILD/testpar/$p was not built"
        # static libhdf5: the program is the real executable, no wrapper
        head -c 4 "$BUILD/testpar/$p" | grep -q ELF ||
            die "$BUILD/testpar/$p is not an executable (libtool wrapper?)"
        cp "$BUILD/testpar/$p" "$BIN.tmp/$p"
    done
    testpar_programs >"$BIN.tmp/PROGRAMS"
    for p in $EXTRA_PROGRAMS; do
        head -c 4 "$BUILD/testpar/$p" | grep -q ELF ||
            die "$BUILD/testpar/$p is not an executable"
        cp "$BUILD/testpar/$p" "$BIN.tmp/$p"
    done
    mv "$BIN.tmp" "$BIN"
    stamp installed
}

# ---------------------------------------------------------------- main
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock-hdf5"
if ! flock -n 9; then
    log "waiting for another build-hdf5-testpar.sh to finish ($CACHE/.lock-hdf5)"
    flock 9
fi

install_packages "${APT_PACKAGES[@]}"
[ "$MODE" = deps-only ] && exit 0
if has_stamp installed && [ -s "$BIN/PROGRAMS" ]; then
    log "HDF5 $HDF5_VERSION testpar is up to date: $BIN"
    exit 0
fi

T0=$SECONDS
[ -n "$MPICH_PREFIX" ] || MPICH_PREFIX=$("$REPO_DIR/mpich/build-mpich.sh" --print-prefix)
[ -n "$GALLEY_PREFIX" ] || GALLEY_PREFIX=$REPO_DIR/_prefix
[ -x "$MPICH_PREFIX/bin/mpicc" ] ||
    die "no MPICH at $MPICH_PREFIX (build it: mpich/build-mpich.sh --galley-prefix P)"
MPICH_PREFIX=$(cd "$MPICH_PREFIX" && pwd)

# libmpi.so.12 has a DT_NEEDED on libgalley.so.0 and no rpath to it: the
# linker (checking libmpi's references) and configure's test programs find
# it through LD_LIBRARY_PATH.
GALLEY_LIB=
if [ -e "$GALLEY_PREFIX/lib/libgalley.so.0" ]; then
    GALLEY_LIB=$(cd "$GALLEY_PREFIX/lib" && pwd):
else
    ldd "$MPICH_PREFIX/lib/libmpi.so.12" | grep -q 'libgalley.so.0 => /' ||
        die "no $GALLEY_PREFIX/lib/libgalley.so.0 and none through LD_LIBRARY_PATH (./quickstart build, or --galley-prefix P)"
fi
export LD_LIBRARY_PATH="$GALLEY_LIB$MPICH_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

fetch_source
configure_tree
build_tree
install_programs
log "done in $((SECONDS - T0)) s: $BIN"
