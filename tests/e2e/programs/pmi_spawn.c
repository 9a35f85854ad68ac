/* pmi_spawn: MPICH's own PMI-1 client (simple_pmi.c, linked from libmpich.a) spawning
 * processes as MPICH's MPI_Comm_spawn asks its process manager to: one PMI_Spawn_multiple of
 * two commands, a preput pair (the parent's port name, in MPICH) and an MPI_Info pair.
 *
 *   pmi_spawn parent N1 N2 [MODE]   every rank: PMI_Init; rank 0 spawns N1 copies of
 *                                   "pmi_spawn child a" (info wdir=/tmp) and N2 of
 *                                   "pmi_spawn child b MODE"; then the ranks' own barrier
 *   pmi_spawn child ARG [MODE]      a spawned process: its group, rank, size, appnum, the
 *                                   preput value, a barrier with its group and their puts
 *
 * MODE: "crash" (the b children exit 5 after PMI_Init), "hold" (the b children say "ready"
 * and sleep), "host" (the spawn carries the info key host=..., which ferry refuses), "nest"
 * (the group's rank 1 spawns one "pmi_spawn child c" of its own; with PMI_SPAWN_MARK=FILE the
 * "c" child creates FILE and the parents end only once it is there). Every line
 * says what it saw; a check that fails exits non-zero. On stderr, for the benchmark (bench/
 * ferrybench/mpi.py), the clock's time (CLOCK_REALTIME: the simulated hosts share it) at rank
 * 0's call and return ("spawn_call T return T") and at each child's end of its group's first
 * barrier ("child_up T"). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  const char* key;
  char* val;
} PMI_keyval_t;

int PMI_Init(int* spawned);
int PMI_Get_rank(int* rank);
int PMI_Get_size(int* size);
int PMI_Get_appnum(int* appnum);
int PMI_Get_universe_size(int* size);
int PMI_KVS_Get_my_name(char kvsname[], int length);
int PMI_KVS_Put(const char kvsname[], const char key[], const char value[]);
int PMI_KVS_Commit(const char kvsname[]);
int PMI_KVS_Get(const char kvsname[], const char key[], char value[], int length);
int PMI_Barrier(void);
int PMI_Finalize(void);
int PMI_Spawn_multiple(int count, const char* cmds[], const char** argvs[], const int maxprocs[],
                       const int info_keyval_sizes[], const PMI_keyval_t* info_keyval_vectors[],
                       int preput_keyval_size, const PMI_keyval_t preput_keyval_vector[],
                       int errors[]);

static char kvs[256];
static char host[256];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void must(int rc, const char* what) {
  if (rc != 0) {
    printf("%s failed: rc=%d\n", what, rc);
    exit(2);
  }
}

/* Puts "KEYr" = this host, waits in the group's barrier, and counts the group's puts seen. */
static int exchange(const char* prefix, int rank, int size) {
  char key[64], value[256];
  snprintf(key, sizeof key, "%s%d", prefix, rank);
  must(PMI_KVS_Put(kvs, key, host), "PMI_KVS_Put");
  must(PMI_KVS_Commit(kvs), "PMI_KVS_Commit");
  must(PMI_Barrier(), "PMI_Barrier");
  int seen = 0;
  for (int r = 0; r < size; ++r) {
    snprintf(key, sizeof key, "%s%d", prefix, r);
    if (PMI_KVS_Get(kvs, key, value, sizeof value) == 0 && strncmp(value, "fnode", 5) == 0) ++seen;
  }
  return seen;
}

static int parent(int argc, char** argv) {
  const int n1 = argc > 2 ? atoi(argv[2]) : 1, n2 = argc > 3 ? atoi(argv[3]) : 1;
  const char* mode = argc > 4 ? argv[4] : "";
  int spawned = -1, rank = -1, size = -1;
  must(PMI_Init(&spawned), "PMI_Init");
  PMI_Get_rank(&rank);
  PMI_Get_size(&size);
  must(PMI_KVS_Get_my_name(kvs, sizeof kvs), "PMI_KVS_Get_my_name");
  if (rank == 0) {
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 2;
    self[n] = '\0';
    const char* cmds[2] = {self, self};
    const char* args_a[] = {"child", "a", NULL};
    const char* args_b[] = {"child", "b", mode, NULL};
    const char** argvs[2] = {args_a, args_b};
    const int maxprocs[2] = {n1, n2};
    PMI_keyval_t info_a[1] = {{"wdir", (char*)"/tmp"}};
    PMI_keyval_t info_b[1] = {{"host", (char*)"fnode2"}};
    const int info_sizes[2] = {1, strcmp(mode, "host") == 0 ? 1 : 0};
    const PMI_keyval_t* infos[2] = {info_a, info_b};
    char port[300];
    snprintf(port, sizeof port, "port-of-%s", kvs);
    PMI_keyval_t preput[1] = {{"PARENT_ROOT_PORT_NAME", port}};
    int errors[2] = {0, 0};
    const double call = now();
    const int rc = PMI_Spawn_multiple(2, cmds, argvs, maxprocs, info_sizes, infos, 1, preput,
                                      errors);
    fprintf(stderr, "spawn_call %.6f return %.6f\n", call, now());
    printf("parent 0/%d spawn rc=%d\n", size, rc);
    fflush(stdout);
    if (rc != 0) return 3;
  }
  int universe = -1;
  must(PMI_Get_universe_size(&universe), "PMI_Get_universe_size");
  const int seen = exchange("p", rank, size);
  printf("parent %d/%d spawned=%d sees %d/%d universe %d\n", rank, size, spawned, seen, size,
         universe);
  must(PMI_Finalize(), "PMI_Finalize");
  /* "nest": a parent's slot stays taken until the grandchild runs (it creates the file
   * PMI_SPAWN_MARK names), so that the grandchild's place does not depend on when the parents
   * end. */
  const char* mark = getenv("PMI_SPAWN_MARK");
  for (int i = 0; strcmp(mode, "nest") == 0 && mark && access(mark, F_OK) != 0 && i < 600; ++i)
    usleep(100000);
  return seen == size && spawned == 0 ? 0 : 4;
}

static int child(int argc, char** argv) {
  const char* arg = argc > 2 ? argv[2] : "";
  const char* mode = argc > 3 ? argv[3] : "";
  int spawned = -1, rank = -1, size = -1, appnum = -1;
  must(PMI_Init(&spawned), "PMI_Init");
  PMI_Get_rank(&rank);
  PMI_Get_size(&size);
  must(PMI_Get_appnum(&appnum), "PMI_Get_appnum");
  must(PMI_KVS_Get_my_name(kvs, sizeof kvs), "PMI_KVS_Get_my_name");
  if (strcmp(mode, "crash") == 0) {
    printf("child %d crashing\n", rank);
    fflush(stdout);
    _exit(5);
  }
  const char* mark = getenv("PMI_SPAWN_MARK");
  if (strcmp(arg, "c") == 0 && mark) close(open(mark, O_WRONLY | O_CREAT, 0644));
  char port[300] = "", cwd[PATH_MAX] = "?";
  must(PMI_KVS_Get(kvs, "PARENT_ROOT_PORT_NAME", port, sizeof port), "the preput key");
  if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, "?");
  /* The parent's KVS name is in the port name: the children's group is another. */
  const int own = strncmp(port, "port-of-", 8) == 0 && strcmp(port + 8, kvs) != 0;
  if (strcmp(mode, "nest") == 0 && rank == 1) {
    usleep(300000); /* the parents' own barrier is long over: they would have ended by now */
    char self[PATH_MAX], mine[300];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 2;
    self[n] = '\0';
    const char* cmds[1] = {self};
    const char* args[] = {"child", "c", NULL};
    const char** argvs[1] = {args};
    const int maxprocs[1] = {1}, info_sizes[1] = {0};
    const PMI_keyval_t* infos[1] = {NULL};
    snprintf(mine, sizeof mine, "port-of-%s", kvs);
    PMI_keyval_t preput[1] = {{"PARENT_ROOT_PORT_NAME", mine}};
    int errors[1] = {0};
    printf("child %d spawn rc=%d\n", rank,
           PMI_Spawn_multiple(1, cmds, argvs, maxprocs, info_sizes, infos, 1, preput, errors));
    fflush(stdout);
  }
  const int seen = exchange("c", rank, size);
  fprintf(stderr, "child_up %.6f\n", now());
  printf("child %d/%d app %d arg %s spawned=%d own-kvs=%d sees %d/%d on %s in %s\n", rank, size,
         appnum, arg, spawned, own, seen, size, host, strcmp(arg, "a") == 0 ? cwd : "-");
  must(PMI_Finalize(), "PMI_Finalize");
  if (strcmp(mode, "hold") == 0) {
    printf("child %d ready\n", rank);
    fflush(stdout);
    sleep(120);
  }
  return seen == size && spawned == 1 && own ? 0 : 4;
}

int main(int argc, char** argv) {
  gethostname(host, sizeof host);
  if (argc > 1 && strcmp(argv[1], "parent") == 0) return parent(argc, argv);
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child(argc, argv);
  fprintf(stderr, "usage: pmi_spawn parent N1 N2 [crash|hold|host] | pmi_spawn child ARG [MODE]\n");
  return 2;
}
