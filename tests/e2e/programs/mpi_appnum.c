/* mpi_appnum: one rank of an MPMD job says which part it is. Prints
 *   "part LABEL appnum A rank R/N local L sum S var V wdir W host H"
 * where LABEL is argv[1], A the MPI_APPNUM attribute (-1 when unset), S an allreduce of every
 * rank's (appnum + 1) over MPI_COMM_WORLD (one world of every part), V $PART_VAR ("-" when
 * unset), W the last component of the working directory, H the host name. Built with mpicc.openmpi and
 * mpicc.mpich; argv[2] (a token) only marks the processes. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, flag = 0, *appnum = NULL;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
  int app = flag && appnum ? *appnum : -1;
  int mine = app + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const char *var = getenv("PART_VAR");
  const char *local = getenv("LOCAL_RANK");
  char cwd[4096] = "?";
  if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, "?");
  const char *base = strrchr(cwd, '/');
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  printf("part %s appnum %d rank %d/%d local %s sum %d var %s wdir %s host %s\n",
         argc > 1 ? argv[1] : "?", app, rank, size, local ? local : "-", sum, var ? var : "-",
         base ? base + 1 : cwd, host);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
