##
## Galley for MPI-IO: ROMIO automake fragment, included from
## adio/Makefile.mk (see mpich/romio-galley.patch).  List every source file
## of the driver here; build-mpich.sh re-runs ROMIO's automake when this
## file changes.
##

if BUILD_AD_GALLEY

noinst_HEADERS += adio/ad_galley/ad_galley.h adio/ad_galley/galley_mpi_common.h

romio_other_sources +=                  \
    adio/ad_galley/ad_galley.c          \
    adio/ad_galley/ad_galley_aio.c      \
    adio/ad_galley/ad_galley_close.c    \
    adio/ad_galley/ad_galley_coll.c     \
    adio/ad_galley/ad_galley_collerr.c  \
    adio/ad_galley/ad_galley_common.c   \
    adio/ad_galley/ad_galley_delete.c   \
    adio/ad_galley/ad_galley_fcntl.c    \
    adio/ad_galley/ad_galley_features.c \
    adio/ad_galley/ad_galley_flush.c    \
    adio/ad_galley/ad_galley_hints.c    \
    adio/ad_galley/ad_galley_io.c       \
    adio/ad_galley/ad_galley_lock.c     \
    adio/ad_galley/ad_galley_open.c     \
    adio/ad_galley/ad_galley_read.c     \
    adio/ad_galley/ad_galley_resize.c   \
    adio/ad_galley/ad_galley_sharedfp.c \
    adio/ad_galley/ad_galley_write.c    \
    adio/ad_galley/galley_mpi_common.c

endif BUILD_AD_GALLEY
