# shellcheck shell=bash
# debian-source.sh -- apt and Debian-source helpers shared by the scripts
# that build a Debian source package with our changes or against our build
# (mpich/build-mpich.sh, hdf5-tests/build-hdf5-testpar.sh), and their
# build-step helpers.  Sourced, not run.  The sourcing script defines log
# and die, and sets CACHE (the cache directory outside the clone), MODE
# (build or a print-only mode) and, before a step runs, STAMPS and LOGS.
#
#   apt_update_once                    apt-get update, once per script run
#   as_root WHAT                       die unless root (WHAT: what apt is for)
#   install_packages PKG...            apt-get install those not installed
#   apt_src_version SRC                newest source version apt knows, or ""
#   apt_bin_version BIN                candidate version of a binary package
#                                      (binNMU suffix dropped), or ""
#   enable_deb_src SRC                 add deb-src entries if apt has none
#   debian_version SRC BIN DEFAULT     the version a cache key is made from
#   fetch_debian_source SRC VER DIR    apt-get source SRC=VER into DIR, once
#   stamp NAME [VALUE], has_stamp NAME a step's completion stamp in $STAMPS
#   run_logged NAME CMD...             run a step, output in $LOGS/NAME.log

APT_UPDATED=0
apt_update_once() {
    if [ "$APT_UPDATED" = 0 ]; then
        log "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        APT_UPDATED=1
    fi
}

as_root() {
    [ "$(id -u)" = 0 ] || die "must run as root to use apt (or preinstall: $*)"
}

install_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    as_root "${missing[*]}"
    apt_update_once
    log "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >&2
}

apt_src_version() {
    apt-cache showsrc --only-source "$1" 2>/dev/null |
        awk '/^Version:/ {print $2}' | sort -V | tail -n 1
}

# Works without deb-src entries.
apt_bin_version() {
    apt-cache policy "$1" 2>/dev/null |
        awk '/Candidate:/ {print $2}' | sed -e 's/+b[0-9]*$//' -e 's/^(none)$//'
}

# Idempotent: a deb822 debian.sources gets a sibling file with
# "Types: deb-src", a classic sources.list a .list copy.
enable_deb_src() {
    [ -n "$(apt_src_version "$1")" ] && return 0
    as_root "deb-src entries for $1"
    local d=/etc/apt/sources.list.d
    if ! cat /etc/apt/sources.list $d/*.list $d/*.sources 2>/dev/null |
        grep -qE '^(Types:.*deb-src|deb-src )'; then
        if [ -f $d/debian.sources ]; then
            log "enabling deb-src ($d/galley-deb-src.sources)"
            sed -e 's/^Types:.*/Types: deb-src/' $d/debian.sources \
                >$d/galley-deb-src.sources.tmp
            mv $d/galley-deb-src.sources.tmp $d/galley-deb-src.sources
        elif [ -f /etc/apt/sources.list ] && grep -qE '^deb ' /etc/apt/sources.list; then
            log "enabling deb-src ($d/galley-deb-src.list)"
            sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >$d/galley-deb-src.list.tmp
            mv $d/galley-deb-src.list.tmp $d/galley-deb-src.list
        else
            die "no Debian apt sources found to derive deb-src entries from"
        fi
    fi
    APT_UPDATED=0
    apt_update_once
    [ -n "$(apt_src_version "$1")" ] ||
        die "apt knows no '$1' source package even with deb-src enabled"
}

# The Debian version of source package SRC a cache key is computed from.
# Once a source tree has been downloaded, $CACHE/src/SRC.version pins it
# (a stable key that needs no network).  Otherwise apt's source version, or
# the candidate version of binary package BIN; a build enables deb-src to
# ask, a print-only mode falls back to DEFAULT.
debian_version() {
    local src=$1 bin=$2 default=$3 v
    if [ -s "$CACHE/src/$src.version" ]; then
        cat "$CACHE/src/$src.version"; return
    fi
    v=$(apt_src_version "$src")
    [ -n "$v" ] || v=$(apt_bin_version "$bin")
    if [ -z "$v" ]; then
        if [ "$MODE" = build ]; then
            enable_deb_src "$src"
            v=$(apt_src_version "$src")
        else
            v=$default
        fi
    fi
    [ -n "$v" ] || die "cannot determine the Debian $src version (run apt-get update?)"
    echo "$v"
}

# Download the pristine source of SRC=VER into DIR (a complete tree, or
# nothing: an interrupted download is started again), and pin the version
# in $CACHE/src/SRC.version.
fetch_debian_source() {
    local src=$1 ver=$2 dest=$3 tmp dir
    [ -f "$dest/.galley-complete" ] && return 0
    enable_deb_src "$src"
    mkdir -p "$CACHE/src"
    rm -rf "$CACHE/src/.fetch-$src".*          # left by an interrupted download
    tmp=$(mktemp -d "$CACHE/src/.fetch-$src.XXXXXX")
    log "apt-get source $src=$ver"
    if ! (cd "$tmp" && apt-get source "$src=$ver" >"$tmp.log" 2>&1); then
        tail -n 20 "$tmp.log" >&2
        rm -rf "$tmp" "$tmp.log"
        die "apt-get source $src=$ver failed"
    fi
    rm -f "$tmp.log"
    dir=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name "$src-*" | head -n 1)
    if [ -z "$dir" ] || [ ! -f "$dir/configure" ]; then
        die "unexpected apt-get source result in $tmp"
    fi
    touch "$dir/.galley-complete"
    rm -rf "$dest"
    mv "$dir" "$dest"
    rm -rf "$tmp"
    [ -s "$CACHE/src/$src.version" ] || echo "$ver" >"$CACHE/src/$src.version"
}

# ---------------------------------------------------------------- steps
# A step leaves its stamp only once it has completed, so a script can be
# interrupted and run again.
stamp() { mkdir -p "$STAMPS" && printf '%s\n' "${2:-done}" >"$STAMPS/$1"; }
has_stamp() { [ -f "$STAMPS/$1" ]; }

# Run a step with its output in a log; show the log's tail on failure.
run_logged() {
    local name=$1; shift
    mkdir -p "$LOGS"
    local t0=$SECONDS
    if ! "$@" >"$LOGS/$name.log" 2>&1; then
        tail -n 40 "$LOGS/$name.log" >&2
        die "step '$name' failed; full log: $LOGS/$name.log"
    fi
    log "  $name: $((SECONDS - t0)) s"
}
