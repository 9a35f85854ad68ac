/* A real MPICH peer for end-to-end tests: MPI_Allreduce, then a ring of MPI_Sendrecv
 * carrying a token once around, each rank checking what it got. Prints one line
 * "mpi rank R/N ok ..." per rank and exits 0, or exits 1 (MPI_Abort with 3 if a check fails,
 * so the launcher's abort path is exercised too).
 *
 *   mpicc.mpich -O2 -o mpi_ring mpi_ring.c
 *   mpiexec.hydra -n 2 ./mpi_ring            (reference launcher, this machine only)
 *   ferryrun -np 4 -H a:2,b:2 ./mpi_ring     (ferry's PMI-1 server)
 *   ./mpi_ring --abort N                     (rank N calls MPI_Abort(..., 7) after init)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = -1, size = 0, len = 0;
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(host, &len);

  if (argc > 2 && strcmp(argv[1], "--abort") == 0 && rank == atoi(argv[2])) {
    fprintf(stderr, "mpi rank %d: aborting with 7 as asked\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 7);
  }

  /* Allreduce: sum of rank+1 over all ranks. */
  long mine = rank + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  long want = (long)size * (size + 1) / 2;
  if (sum != want) {
    fprintf(stderr, "mpi rank %d: allreduce gave %ld, expected %ld\n", rank, sum, want);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }

  /* Ring: every rank sends its rank to rank+1, then forwards what it received; after `size`
   * hops each rank holds its own value again. The first hop checks the neighbour. */
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  long token = 0, got = -1;
  for (int hop = 0; hop < size; ++hop) {
    long send = (hop == 0) ? rank : token;
    MPI_Sendrecv(&send, 1, MPI_LONG, next, hop, &got, 1, MPI_LONG, prev, hop,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    token = got;
    if (hop == 0 && got != prev) {
      fprintf(stderr, "mpi rank %d: ring got %ld from %d, expected %d\n", rank, got, prev, prev);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  if (token != rank) {
    fprintf(stderr, "mpi rank %d: ring token came back as %ld\n", rank, token);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }

  /* A larger message too (eager limits differ from small ones). */
  enum { N = 1 << 16 };
  static int out[N], in[N];
  for (int i = 0; i < N; ++i) out[i] = rank * N + i;
  MPI_Sendrecv(out, N, MPI_INT, next, 99, in, N, MPI_INT, prev, 99, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  for (int i = 0; i < N; ++i)
    if (in[i] != prev * N + i) {
      fprintf(stderr, "mpi rank %d: large message corrupt at %d\n", rank, i);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }

  printf("mpi rank %d/%d ok allreduce=%ld host=%s\n", rank, size, sum, host);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
