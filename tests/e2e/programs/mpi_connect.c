// Two halves of one MPI job meet as MPI-2 dynamic processes do: the first half's leader opens
// a port and publishes it under a service name; the second half's leader looks it up; the
// halves accept and connect (an intercommunicator), exchange a value both ways, disconnect,
// and the name is unpublished (a second lookup then fails). Prints one line per rank:
//   connect R/N half=H remote=M got=V ok
// Usage: mpi_connect SERVICE [die]   (die: the last rank kills itself with SIGKILL once the
// port is published, while the others wait to connect)
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* service = argc > 1 ? argv[1] : "ferry-connect-test";
  const int half = rank < size / 2 ? 0 : 1;
  MPI_Comm mine, inter;
  MPI_Comm_split(MPI_COMM_WORLD, half, rank, &mine);
  int mine_rank;
  MPI_Comm_rank(mine, &mine_rank);
  char port[MPI_MAX_PORT_NAME] = "";
  if (half == 0 && mine_rank == 0) {
    MPI_Open_port(MPI_INFO_NULL, port);
    MPI_Publish_name(service, MPI_INFO_NULL, port);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (argc > 2 && strcmp(argv[2], "die") == 0 && rank == size - 1) kill(getpid(), SIGKILL);
  if (half == 0) {
    MPI_Comm_accept(port, MPI_INFO_NULL, 0, mine, &inter);
  } else {
    if (mine_rank == 0) MPI_Lookup_name(service, MPI_INFO_NULL, port);
    MPI_Comm_connect(port, MPI_INFO_NULL, 0, mine, &inter);
  }
  int remote;
  MPI_Comm_remote_size(inter, &remote);
  // Each rank sends its world rank to the remote rank of the same index (if any) and sums.
  int sum = 0, mine_value = rank + 1;
  MPI_Allreduce(&mine_value, &sum, 1, MPI_INT, MPI_SUM, inter);  // the remote group's sum
  MPI_Comm_disconnect(&inter);
  MPI_Barrier(MPI_COMM_WORLD);
  int ok = 1;
  if (half == 0 && mine_rank == 0) {
    MPI_Unpublish_name(service, MPI_INFO_NULL, port);
    MPI_Close_port(port);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (half == 1 && mine_rank == 0) {
    // The name is gone: a lookup fails (errors returned, not fatal).
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char again[MPI_MAX_PORT_NAME];
    if (MPI_Lookup_name(service, MPI_INFO_NULL, again) == MPI_SUCCESS) ok = 0;
  }
  // The remote half's sum of (rank + 1).
  const int lo = half == 0 ? size / 2 : 0, hi = half == 0 ? size : size / 2;
  int want = 0;
  for (int r = lo; r < hi; ++r) want += r + 1;
  if (sum != want) ok = 0;
  printf("connect %d/%d half=%d remote=%d got=%d %s\n", rank, size, half, remote, sum,
         ok ? "ok" : "WRONG");
  MPI_Comm_free(&mine);
  MPI_Finalize();
  return ok ? 0 : 1;
}
