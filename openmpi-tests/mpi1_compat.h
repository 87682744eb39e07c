/*
 * mpi1_compat.h -- forced into ROMIO's test programs when they are built
 * with Debian's Open MPI 4.1.4 (-include).  Some of them still use MPI-1
 * names that MPI-3.0 removed (MPI_LB, MPI_UB, MPI_Type_struct,
 * MPI_Address, ...).  This Open MPI's library still has them, but its mpi.h
 * hides them unless Open MPI was configured with
 * --enable-mpi1-compatibility, which Debian's was not: declare them again.
 */
#ifndef OMPI_OMIT_MPI1_COMPAT_DECLS
#define OMPI_OMIT_MPI1_COMPAT_DECLS 0
#endif
#include <mpi.h>

#undef MPI_LB
#undef MPI_UB
OMPI_DECLSPEC extern struct ompi_predefined_datatype_t ompi_mpi_lb;
OMPI_DECLSPEC extern struct ompi_predefined_datatype_t ompi_mpi_ub;
#define MPI_LB OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_lb)
#define MPI_UB OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_ub)
