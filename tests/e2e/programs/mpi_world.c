/* An Open MPI (or MPICH) peer for end-to-end tests: checks that the ranks form one world
 * and prints one line per rank, "mpi world R/N local L/LN ...", or exits through MPI_Abort
 * with 3 when a check fails.
 *  - every rank has a distinct number (MPI_Allgather of the ranks);
 *  - MPI_Allreduce of rank+1, MPI_Alltoall of rank*N+peer;
 *  - a ring of MPI_Sendrecv (small and 256 KiB messages);
 *  - MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) holds exactly the ranks of this host (their
 *    processor names all equal ours, their number is what the launcher says: LOCAL_SIZE
 *    argument), and a shared-memory window written by each is read by its neighbour.
 *
 *   mpicc.openmpi -O2 -o mpi_world mpi_world.c
 *   ferryrun -np 8 -H a:2,b:2,c:2,d:2 ./mpi_world
 *   ./mpi_world --abort N        rank N calls MPI_Abort(MPI_COMM_WORLD, 7) after init
 *   ./mpi_world --no-finalize N  rank N leaves with _exit(0) after a barrier, no MPI_Finalize
 *   ./mpi_world --kill N         rank N kills itself (SIGKILL) after a barrier
 *   ./mpi_world --hang           every rank sleeps 600 s after a barrier (to be stopped)
 *   ./mpi_world --abort-first N  as --abort N, but only in ferry's first attempt
 *                                (FERRY_ATTEMPT unset or 0): a restarted job then succeeds
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank = -1, size = 0;

static void check(int ok, const char* what) {
  if (ok) return;
  fprintf(stderr, "mpi world rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

static int arg_rank(int argc, char** argv, const char* flag) {
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], flag) == 0) return atoi(argv[i + 1]);
  return -1;
}

static void world_checks(void) {
  int* all = malloc(sizeof(int) * size);
  MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
  for (int i = 0; i < size; ++i) check(all[i] == i, "allgather: ranks not distinct");
  long mine = rank + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  check(sum == (long)size * (size + 1) / 2, "allreduce: wrong sum");
  int* out = malloc(sizeof(int) * size);
  int* in = malloc(sizeof(int) * size);
  for (int p = 0; p < size; ++p) out[p] = rank * size + p;
  MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
  for (int p = 0; p < size; ++p) check(in[p] == p * size + rank, "alltoall: wrong value");
  free(all);
  free(out);
  free(in);
}

static void ring(void) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  long token = rank, got = -1;
  for (int hop = 0; hop < size; ++hop) {
    MPI_Sendrecv(&token, 1, MPI_LONG, next, hop, &got, 1, MPI_LONG, prev, hop, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    token = got;
  }
  check(token == rank, "ring: token did not come back");
  enum { N = 1 << 16 };
  static int big_out[N], big_in[N];
  for (int i = 0; i < N; ++i) big_out[i] = rank * N + i;
  MPI_Sendrecv(big_out, N, MPI_INT, next, 99, big_in, N, MPI_INT, prev, 99, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  for (int i = 0; i < N; ++i) check(big_in[i] == prev * N + i, "ring: large message corrupt");
}

/* The shared communicator: this host's ranks, and memory they really share. */
static void shared(int* local_rank, int* local_size) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, local_rank);
  MPI_Comm_size(node, local_size);
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(host, &len);
  char* names = calloc((size_t)*local_size, MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                node);
  for (int i = 0; i < *local_size; ++i)
    check(strcmp(names + (size_t)i * MPI_MAX_PROCESSOR_NAME, host) == 0,
          "shared communicator spans hosts");
  free(names);
  long* base = NULL;
  MPI_Win win;
  MPI_Win_allocate_shared(sizeof(long), sizeof(long), MPI_INFO_NULL, node, &base, &win);
  MPI_Win_lock_all(0, win);
  *base = 1000 + rank;
  MPI_Win_sync(win);
  MPI_Barrier(node);
  MPI_Win_sync(win);
  int peer = (*local_rank + 1) % *local_size;
  MPI_Aint sz;
  int disp;
  long* theirs = NULL;
  MPI_Win_shared_query(win, peer, &sz, &disp, &theirs);
  long* world_of = malloc(sizeof(long) * (size_t)*local_size);
  long me = rank;
  MPI_Allgather(&me, 1, MPI_LONG, world_of, 1, MPI_LONG, node);
  check(*theirs == 1000 + world_of[peer], "shared memory: neighbour's value not seen");
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  free(world_of);
  MPI_Comm_free(&node);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* attempt = getenv("FERRY_ATTEMPT");
  const int first_attempt = attempt == NULL || strcmp(attempt, "0") == 0;
  if (arg_rank(argc, argv, "--abort") == rank ||
      (first_attempt && arg_rank(argc, argv, "--abort-first") == rank)) {
    fprintf(stderr, "mpi world rank %d: aborting with 7 as asked\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 7);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (arg_rank(argc, argv, "--no-finalize") == rank) _exit(0);
  if (arg_rank(argc, argv, "--kill") == rank) raise(SIGKILL);
  for (int i = 1; i < argc; ++i)
    if (strcmp(argv[i], "--hang") == 0) sleep(600);
  world_checks();
  ring();
  int local_rank = -1, local_size = 0;
  shared(&local_rank, &local_size);
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(host, &len);
  printf("mpi world %d/%d local %d/%d host=%s ok\n", rank, size, local_rank, local_size, host);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
