#!/usr/bin/env bash
#
# build-mpich.sh -- build (once) and keep up to date an MPICH whose ROMIO
# contains the Galley ADIO driver ("galley:" file-name prefix).
#
#   mpich/build-mpich.sh --galley-prefix P   build/refresh; P/include/galley.h
#                                            and P/lib/libgalley.so must exist
#   mpich/build-mpich.sh --print-prefix      print the MPICH install prefix
#                                            (same key computation, no build)
#   mpich/build-mpich.sh --print-key         print the cache key only
#
# Source: Debian 12's "mpich" source package (apt-get source), patched with
# mpich/romio-galley.patch; the driver sources come from adio_galley/.
#
# Cache (outside the clone): ${GALLEY_CACHE:-$HOME/.cache/galley}
#   src/mpich-<debver>/      pristine Debian source, downloaded once
#   src/mpich.version        Debian version that src/ holds (pins the key)
#   build/mpich-<key>/       patched, configured, built tree (in-tree build)
#   prefix/mpich-<key>/      the install prefix (bin/mpicc, lib/libmpi.so.12,
#                            lib/libmpich.so.12 -> libmpi.so.12, ...)
# <key> = short sha256 of (romio-galley.patch, the configure options below,
# the MPICH Debian version, RECIPE_REV).  adio_galley/* and galley.h are not
# part of the key: when their content changes only ROMIO is recompiled and
# libmpi relinked and reinstalled.
#
# Every step leaves a stamp in build/mpich-<key>/.galley/stamps only once it
# has completed, so the script can be interrupted and re-run at any time.
# Environment: GALLEY_CACHE, GALLEY_MPICH_JOBS (make -j, default 2),
# GALLEY_MPICH_VERSION (Debian version of mpich to use instead of apt's).

set -euo pipefail

# Bump when the build recipe changes in a way the options below do not show.
RECIPE_REV=2

# Debian 12's mpich; only used by --print-prefix/--print-key when neither the
# cache nor apt can tell the version.
DEFAULT_MPICH_VERSION=4.0.2-3

CONFIGURE_OPTS=(
    --with-device=ch3:nemesis
    --with-pm=hydra
    --with-file-system=ufs+nfs+galley
    --enable-romio
    --disable-fortran
    --disable-cxx
    --enable-shared
    --disable-static
    --with-hwloc=embedded
    # A rank waiting for a message polls; every MPIR_CVAR_POLLS_BEFORE_YIELD
    # polls (default 1000, 0: never) it sleeps in usleep(0) (about 50 us),
    # so that the ranks and servers with work get the cores when there are
    # more processes than cores (a laptop, the test suites: 4-8 ranks and 4
    # servers on 2 cores).  MPICH's own default on Linux is never to yield.
    --enable-yield=usleep
    # ROMIO's configure is regenerated with autoconf 2.71, whose AC_C_RESTRICT
    # picks __restrict__ while the shipped (2.69) mpl picked __restrict: pin
    # one spelling to avoid a "restrict redefined" warning per ROMIO file.
    ac_cv_c_restrict=__restrict
)

APT_PACKAGES=(build-essential dpkg-dev autoconf automake libtool patch xz-utils perl)

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$SCRIPT_DIR/.." && pwd)
PATCH_FILE=$SCRIPT_DIR/romio-galley.patch
DRIVER_DIR=$REPO_DIR/adio_galley
CACHE=${GALLEY_CACHE:-$HOME/.cache/galley}
JOBS=${GALLEY_MPICH_JOBS:-2}

log() { printf 'build-mpich: %s\n' "$*" >&2; }
die() { printf 'build-mpich: error: %s\n' "$*" >&2; exit 1; }

usage() {
    sed -n '3,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# ---------------------------------------------------------------- arguments
MODE=build
GALLEY_PREFIX=
while [ $# -gt 0 ]; do
    case "$1" in
        --galley-prefix) [ $# -ge 2 ] || die "--galley-prefix needs a directory"
                         GALLEY_PREFIX=$2; shift 2 ;;
        --galley-prefix=*) GALLEY_PREFIX=${1#*=}; shift ;;
        --print-prefix) MODE=print-prefix; shift ;;
        --print-key) MODE=print-key; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

# ---------------------------------------------------------------- apt
# shellcheck source=SCRIPTDIR/../tools/debian-source.sh
. "$REPO_DIR/tools/debian-source.sh"

# ---------------------------------------------------------------- version/key
# The Debian version of MPICH the key is computed from (pinned by
# src/mpich.version once the source has been downloaded).
mpich_version() {
    if [ -n "${GALLEY_MPICH_VERSION:-}" ]; then
        echo "$GALLEY_MPICH_VERSION"; return
    fi
    debian_version mpich mpich "$DEFAULT_MPICH_VERSION"
}

MPICH_VERSION=$(mpich_version)
KEY=$(
    {
        echo "recipe=$RECIPE_REV"
        echo "mpich=$MPICH_VERSION"
        printf 'opt=%s\n' "${CONFIGURE_OPTS[@]}"
        cat "$PATCH_FILE"
    } | sha256sum | cut -c1-12
)
SRC=$CACHE/src/mpich-$MPICH_VERSION
BUILD=$CACHE/build/mpich-$KEY
PREFIX=$CACHE/prefix/mpich-$KEY
STAMPS=$BUILD/.galley/stamps
LOGS=$BUILD/.galley/logs
GDEP=$BUILD/.galley/dep          # include -> P/include, lib/libgalley.so*
ROMIO=$BUILD/src/mpi/romio
DRV_DST=$ROMIO/adio/ad_galley

case "$MODE" in
    print-prefix) echo "$PREFIX"; exit 0 ;;
    print-key) echo "$KEY"; exit 0 ;;
esac

# ---------------------------------------------------------------- checks
[ -n "$GALLEY_PREFIX" ] || { usage >&2; die "--galley-prefix P is required"; }
[ -d "$GALLEY_PREFIX" ] || die "galley prefix $GALLEY_PREFIX does not exist"
GALLEY_PREFIX=$(cd "$GALLEY_PREFIX" && pwd)
[ -f "$GALLEY_PREFIX/include/galley.h" ] || die "$GALLEY_PREFIX/include/galley.h not found"
[ -e "$GALLEY_PREFIX/lib/libgalley.so" ] || die "$GALLEY_PREFIX/lib/libgalley.so not found"
[ -f "$PATCH_FILE" ] || die "$PATCH_FILE not found"
[ -f "$DRIVER_DIR/Makefile.mk" ] || die "$DRIVER_DIR/Makefile.mk not found"

# Driver files that are copied into ROMIO (and hashed).
list_driver_files() {
    local f
    for f in "$1"/*.c "$1"/*.h "$1"/Makefile.mk; do
        [ -f "$f" ] && printf '%s\n' "${f##*/}"
    done | LC_ALL=C sort
}
driver_files() { list_driver_files "$DRIVER_DIR"; }

driver_hash() {
    local f
    {
        for f in $(driver_files); do
            printf '%s\n' "$f"
            sha256sum <"$DRIVER_DIR/$f"
        done
    } | sha256sum | cut -c1-16
}

header_hash() {
    sha256sum <"$GALLEY_PREFIX/include/galley.h" | cut -c1-16
}

# SONAME of the Galley library libmpi must carry a DT_NEEDED for.
galley_soname() {
    readelf -d "$GALLEY_PREFIX/lib/libgalley.so" 2>/dev/null |
        sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'
}

stamp_val() { cat "$STAMPS/$1" 2>/dev/null || true; }

# Copy the driver into the ROMIO tree: only files whose content changed (so
# make recompiles only those), and drop files that disappeared.
sync_driver() {
    local f
    mkdir -p "$DRV_DST"
    for f in $(driver_files); do
        cmp -s "$DRIVER_DIR/$f" "$DRV_DST/$f" || cp "$DRIVER_DIR/$f" "$DRV_DST/$f"
    done
    for f in $(list_driver_files "$DRV_DST"); do
        [ -e "$DRIVER_DIR/$f" ] || rm -f "$DRV_DST/$f"
    done
}

# Point the build at the Galley prefix through symlinks inside the build tree,
# so that the configured tree does not depend on where the clone lives.  Only
# the shared library is exposed (no libgalley.la), so libtool records a plain
# DT_NEEDED on libgalley.so.0 and no rpath.
refresh_gdep() {
    mkdir -p "$GDEP/lib"
    ln -sfn "$GALLEY_PREFIX/include" "$GDEP/include"
    rm -f "$GDEP"/lib/libgalley.so*
    local f
    for f in "$GALLEY_PREFIX"/lib/libgalley.so*; do
        ln -s "$f" "$GDEP/lib/$(basename "$f")"
    done
}

# ---------------------------------------------------------------- steps
fetch_source() {
    fetch_debian_source mpich "$MPICH_VERSION" "$SRC"
}

# copy pristine tree, patch, add driver, regenerate ROMIO's build system.
prepare_tree() {
    has_stamp prepared && return 0
    log "preparing $BUILD"
    rm -rf "$BUILD"
    mkdir -p "$(dirname "$BUILD")"
    # -a keeps timestamps so MPICH's own maintainer-mode rules stay quiet
    cp -a "$SRC" "$BUILD"
    rm -f "$BUILD/.galley-complete"
    mkdir -p "$STAMPS" "$LOGS"
    run_logged patch patch -d "$BUILD" -p1 --forward --batch -i "$PATCH_FILE"
    sync_driver
    # ROMIO's autogen.sh is "autoreconf -vif -I confdb" plus a regeneration of
    # its bundled mpl, which MPICH does not use (it builds the top-level mpl);
    # only ROMIO's configure.ac / Makefile.mk changed, so the top-level
    # autogen.sh is not needed.
    run_logged autoreconf-romio sh -c "cd '$ROMIO' && autoreconf -vif -I confdb"
    stamp prepared
}

configure_tree() {
    has_stamp configured && return 0
    log "configuring (log: $LOGS/configure.log)"
    # galley.h and libgalley come through CPATH / LIBRARY_PATH (exported in
    # main): CPPFLAGS/LDFLAGS given to MPICH's configure would be copied into
    # the installed mpicc and mpich.pc.
    # shellcheck disable=SC2016  # $1/$@ expand in the inner shell
    run_logged configure sh -c 'cd "$1" && shift && exec ./configure "$@"' sh "$BUILD" \
        --prefix="$PREFIX" "${CONFIGURE_OPTS[@]}"
    stamp configured
}

build_tree() {
    has_stamp built && return 0
    log "building with make -j$JOBS (log: $LOGS/make.log)"
    run_logged make make -C "$BUILD" -j"$JOBS"
    stamp built
}

post_install() {
    # Debian-built programs (libhdf5-mpich, ...) need libmpich.so.12.
    ln -sfn libmpi.so.12 "$PREFIX/lib/libmpich.so.12"
    ln -sfn libmpi.so "$PREFIX/lib/libmpich.so"
    # libmpi.so carries the DT_NEEDED; keep -lgalley (which would need a -L to
    # the Galley prefix) out of what pkg-config tells applications.
    sed -i 's/ -lgalley\b//' "$PREFIX"/lib/pkgconfig/mpich.pc
    local dyn
    dyn=$(readelf -d "$PREFIX/lib/libmpi.so.12")
    grep -qF "[$want_soname]" <<<"$(grep NEEDED <<<"$dyn")" ||
        die "installed libmpi.so.12 has no DT_NEEDED on $want_soname"
    if grep -E 'R(UN)?PATH' <<<"$dyn" | grep -qF -e "$GDEP" -e "$GALLEY_PREFIX" -e "$REPO_DIR"; then
        die "installed libmpi.so.12 carries an rpath to the galley prefix: $(grep -E 'R(UN)?PATH' <<<"$dyn")"
    fi
}

install_tree() {
    has_stamp installed && return 0
    log "installing into $PREFIX"
    run_logged install make -C "$BUILD" install
    post_install
    stamp installed
}

# Fast path: recompile ROMIO (only the changed driver objects), relink libmpi
# and reinstall just the libraries.
rebuild_driver() {
    log "driver or galley.h changed: rebuilding ROMIO and relinking libmpi"
    run_logged romio-make make -C "$ROMIO" -j"$JOBS"
    run_logged libmpi-link make -C "$BUILD" -j"$JOBS" lib/libmpi.la
    run_logged libmpi-install make -C "$BUILD" install-libLTLIBRARIES
    post_install
}

# ---------------------------------------------------------------- main
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
    log "waiting for another build-mpich.sh to finish ($CACHE/.lock)"
    flock 9
fi

T0=$SECONDS
want_driver=$(driver_hash)
want_header=$(header_hash)
want_soname=$(galley_soname)
[ -n "$want_soname" ] || die "$GALLEY_PREFIX/lib/libgalley.so has no SONAME"

# an install prefix removed by hand is installed again
if has_stamp installed && { [ ! -x "$PREFIX/bin/mpicc" ] || [ ! -e "$PREFIX/lib/libmpi.so.12" ]; }; then
    rm -f "$STAMPS/installed"
fi

if has_stamp installed &&
    [ "$(stamp_val driver-hash)" = "$want_driver" ] &&
    [ "$(stamp_val header-hash)" = "$want_header" ] &&
    [ "$(stamp_val galley-soname)" = "$want_soname" ] &&
    [ "$(readlink "$GDEP/include" 2>/dev/null)" = "$GALLEY_PREFIX/include" ]; then
    log "MPICH $MPICH_VERSION with galley driver is up to date: $PREFIX"
    exit 0
fi

# How the compiler, the linker and configure's test programs find Galley.
export CPATH="$GDEP/include${CPATH:+:$CPATH}"
export LIBRARY_PATH="$GDEP/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$GDEP/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if has_stamp installed; then
    # incremental: only the driver / galley.h / galley prefix changed
    refresh_gdep
    sync_driver
    if [ "$(stamp_val header-hash)" != "$want_header" ]; then
        # a header from another prefix may be older than the objects
        touch "$DRV_DST"/*.c
    fi
    if [ "$(stamp_val galley-soname)" != "$want_soname" ]; then
        rm -f "$BUILD/lib/libmpi.la"   # force a relink for the new DT_NEEDED
    fi
    rebuild_driver
else
    install_packages "${APT_PACKAGES[@]}"
    fetch_source
    prepare_tree
    refresh_gdep
    sync_driver
    configure_tree
    build_tree
    install_tree
fi
stamp driver-hash "$want_driver"
stamp header-hash "$want_header"
stamp galley-soname "$want_soname"
log "done in $((SECONDS - T0)) s: $PREFIX"
