/*
 * Galley for MPI-IO: the ADIO operations table selected by the "galley:"
 * prefix (see adio/common/ad_fstype.c, ADIO_GALLEY in adio/include/adio.h).
 */

#include "ad_galley.h"

/* adioi.h has the ADIOI_Fns_struct define */
#include "adioi.h"

struct ADIOI_Fns_struct ADIO_GALLEY_operations = {
    ADIOI_GALLEY_Open,  /* Open */
    ADIOI_GALLEY_OpenColl,      /* OpenColl */
    ADIOI_GALLEY_ReadContig,    /* ReadContig */
    ADIOI_GALLEY_WriteContig,   /* WriteContig */
    ADIOI_GALLEY_ReadStridedColl,       /* ReadStridedColl */
    ADIOI_GALLEY_WriteStridedColl,      /* WriteStridedColl */
    ADIOI_GEN_SeekIndividual,   /* SeekIndividual */
    ADIOI_GALLEY_Fcntl, /* Fcntl */
    ADIOI_GALLEY_SetInfo,       /* SetInfo */
    ADIOI_GALLEY_ReadStrided,   /* ReadStrided */
    ADIOI_GALLEY_WriteStrided,  /* WriteStrided */
    ADIOI_GALLEY_Close, /* Close */
    ADIOI_GALLEY_IreadContig,   /* IreadContig */
    ADIOI_GALLEY_IwriteContig,  /* IwriteContig */
    ADIOI_FAKE_IODone,  /* ReadDone (unused: generalized requests) */
    ADIOI_FAKE_IODone,  /* WriteDone */
    ADIOI_FAKE_IOComplete,      /* ReadComplete */
    ADIOI_FAKE_IOComplete,      /* WriteComplete */
    ADIOI_GALLEY_IreadStrided,  /* IreadStrided */
    ADIOI_GALLEY_IwriteStrided, /* IwriteStrided */
    ADIOI_GALLEY_Flush, /* Flush */
    ADIOI_GALLEY_Resize,        /* Resize */
    ADIOI_GALLEY_Delete,        /* Delete */
    ADIOI_GALLEY_Feature,       /* Features */
    "GALLEY: Galley for MPI-IO",
    ADIOI_GEN_IreadStridedColl, /* IreadStridedColl */
    ADIOI_GEN_IwriteStridedColl,        /* IwriteStridedColl */
    ADIOI_GALLEY_SetLock        /* SetLock */
};
