/* bench/mpi_bench.c: the MPI jobs of bench/run's mpi section (built there with
 * mpicc.openmpi). Rank 0 prints one result line.
 *
 *   mpi_bench init            MPI_Init, MPI_Barrier, MPI_Finalize: what a launch costs an
 *                             MPI job (its PMIx wire-up included); every rank prints
 *                             "rank_cpu_s X" after MPI_Finalize: the CPU time (user and
 *                             system, all threads) its whole life took
 *   mpi_bench pingpong N      ranks 0 and 1 bounce 8 bytes N times (after N/10 warm-up):
 *                             "latency_us X", half a round trip
 *   mpi_bench allreduce N     every rank, MPI_Allreduce of one double N times (after N/10
 *                             warm-up): "latency_us X", the slowest rank's mean
 *   mpi_bench spawn N         the ranks spawn N copies of this program together
 *                             (MPI_Comm_spawn, root 0): "spawn_s X", from the call to its
 *                             return on rank 0; the children (mode "child") only connect
 *                             back and disconnect, and print "rank_cpu_s X" as init does
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static double pingpong(int rank, int n) {
  char buf[8] = {0};
  double start = 0;
  for (int i = -n / 10; i < n; ++i) {
    if (i == 0) start = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - start) / n / 2 * 1e6;
}

static double allreduce(int n) {
  double x = 1, y = 0, start = 0;
  for (int i = -n / 10; i < n; ++i) {
    if (i == 0) start = MPI_Wtime();
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  double mine = (MPI_Wtime() - start) / n * 1e6, slowest = 0;
  MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return slowest;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* mode = argc > 1 ? argv[1] : "init";
  const int n = argc > 2 ? atoi(argv[2]) : 1000;
  if (strcmp(mode, "child") == 0) {
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) MPI_Comm_disconnect(&parent);
  } else if (strcmp(mode, "spawn") == 0) {
    char* child_argv[] = {"child", NULL};
    MPI_Comm inter;
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    MPI_Comm_spawn(argv[0], child_argv, n, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                   MPI_ERRCODES_IGNORE);
    const double took = MPI_Wtime() - start;
    int children = 0;
    MPI_Comm_remote_size(inter, &children);
    if (rank == 0) printf("spawn_s %.4f children %d\n", took, children);
    MPI_Comm_disconnect(&inter);
  } else if (strcmp(mode, "init") == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("size %d\n", size);
  } else if (strcmp(mode, "pingpong") == 0 && size >= 2) {
    double us = pingpong(rank, n);
    if (rank == 0) printf("latency_us %.3f\n", us);
  } else if (strcmp(mode, "allreduce") == 0) {
    double us = allreduce(n);
    if (rank == 0) printf("latency_us %.3f\n", us);
  } else {
    if (rank == 0) fprintf(stderr, "mpi_bench: unknown mode %s (or too few ranks)\n", mode);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  fflush(stdout);
  MPI_Finalize();
  if (strcmp(mode, "init") == 0 || strcmp(mode, "child") == 0) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("rank_cpu_s %.4f\n", ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
                                      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6);
  }
  return 0;
}
