// MPI_Comm_spawn under ferryrun: the job's ranks spawn N copies of this program together
// (root 0), send each child 42 over the intercommunicator and disconnect. Prints
//   parent R/S on HOST: N children
//   child R/N on HOST got 42 appnum A
// Usage: mpi_spawn N [child-fails|hold]
//        mpi_spawn A+B [...]   MPI_Comm_spawn_multiple: A copies, then B copies (appnum 0, 1)
//   child-fails: the last child exits 3 once it got its value (without MPI_Finalize)
//   hold: every process says "ready" and then sleeps (the fault tests kill something)
//   slow-child: each child says "child waiting" and sleeps before MPI_Init, so that the
//     parents stay inside MPI_Comm_spawn (the fault tests kill something then)
//   affinity: every process also prints "parent|child R cpus LIST" (its Cpus_allowed_list)
//   host: the spawn's MPI_Info asks for host fnode2 (ferry refuses it: the spawn fails)
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// This process's allowed CPUs as /proc/self/status lists them ("0-1", "3").
static void print_cpus(const char* who, int rank) {
  char line[256];
  FILE* f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
      char* v = line + 18;
      while (*v == ' ' || *v == '\t') ++v;
      printf("%s %d cpus %s", who, rank, v);
    }
  if (f) fclose(f);
  fflush(stdout);
}

int main(int argc, char** argv) {
  // Open MPI gives a spawned process its parent's port in OMPI_PARENT_PORT.
  if (argc > 2 && strcmp(argv[2], "slow-child") == 0 && getenv("OMPI_PARENT_PORT")) {
    printf("child waiting\n");
    fflush(stdout);
    sleep(300);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm parent;
  MPI_Comm_get_parent(&parent);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[64];
  gethostname(host, sizeof host);
  const char* mode = argc > 2 ? argv[2] : "";
  if (parent == MPI_COMM_NULL) {
    const char* count = argc > 1 ? argv[1] : "2";
    char* child_argv[] = {(char*)count, (char*)mode, NULL};
    MPI_Comm inter;
    const char* plus = strchr(count, '+');
    if (plus) {
      char* commands[2] = {argv[0], argv[0]};
      char** argvs[2] = {child_argv, child_argv};
      int maxprocs[2] = {atoi(count), atoi(plus + 1)};
      MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
      MPI_Comm_spawn_multiple(2, commands, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &inter,
                              MPI_ERRCODES_IGNORE);
    } else {
      MPI_Info info = MPI_INFO_NULL;
      if (strcmp(mode, "host") == 0) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "host", "fnode2");
      }
      MPI_Comm_spawn(argv[0], child_argv, atoi(count), info, 0, MPI_COMM_WORLD, &inter,
                     MPI_ERRCODES_IGNORE);
    }
    int children;
    MPI_Comm_remote_size(inter, &children);
    if (rank == 0) {
      int v = 42;
      for (int i = 0; i < children; i++) MPI_Send(&v, 1, MPI_INT, i, 0, inter);
    }
    printf("parent %d/%d on %s: %d children\n", rank, size, host, children);
    fflush(stdout);
    if (strcmp(mode, "affinity") == 0) print_cpus("parent", rank);
    if (strcmp(mode, "hold") == 0) {
      printf("parent %d ready\n", rank);
      fflush(stdout);
      sleep(300);
    }
    MPI_Comm_disconnect(&inter);
  } else {
    int v = 0;
    MPI_Recv(&v, 1, MPI_INT, 0, 0, parent, MPI_STATUS_IGNORE);
    int appnum = -1, flag = 0, *ap = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &ap, &flag);
    if (flag) appnum = *ap;
    printf("child %d/%d on %s got %d appnum %d\n", rank, size, host, v, appnum);
    fflush(stdout);
    if (strcmp(mode, "affinity") == 0) print_cpus("child", rank);
    if (strcmp(mode, "child-fails") == 0 && rank == size - 1) exit(3);
    if (strcmp(mode, "hold") == 0) {
      printf("child %d ready\n", rank);
      fflush(stdout);
      sleep(300);
    }
    MPI_Comm_disconnect(&parent);
  }
  MPI_Finalize();
  return 0;
}
