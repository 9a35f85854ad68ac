/* A real PMIx client for ferryd's PMIx server in the unit tests (daemon_pmix_test.cpp):
 * ferryd starts it as a rank, it talks to the server through libpmix's client API.
 *
 *   pmix_test_client exchange    init; put and commit "ferry.test"; fence collecting data;
 *                                read the job size, its local rank and the other rank's
 *                                value; finalize. Prints one line.
 *   pmix_test_client remote      init; asks for rank 2's "ferry.test" (on another host):
 *                                prints what it got, or "not found"
 *   pmix_test_client abort       init; rank 1 calls PMIx_Abort(7); rank 0 waits in a fence
 *   pmix_test_client no-finalize init, then exit(0) without PMIx_Finalize
 *   pmix_test_client dynamic     init; rank 0 publishes "ferry.svc" (read once), rank 1 looks
 *                                it up waiting for it; both connect with ranks 0-2 listed
 *                                (rank 2 is on another host), then fence over them listed;
 *                                prints what it saw; finalize
 */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pmix_proc_t me;

static int get_u32(const pmix_proc_t* who, const char* key, uint32_t* out) {
  pmix_value_t* v = NULL;
  if (PMIx_Get(who, key, NULL, 0, &v) != PMIX_SUCCESS || v == NULL) return -1;
  int ok = 0;
  if (v->type == PMIX_UINT32) *out = v->data.uint32;
  else if (v->type == PMIX_UINT16) *out = v->data.uint16;
  else ok = -1;
  PMIX_VALUE_RELEASE(v);
  return ok;
}

static int exchange(void) {
  char mine[64];
  snprintf(mine, sizeof mine, "value-%u", me.rank);
  pmix_value_t val;
  PMIX_VALUE_CONSTRUCT(&val);
  val.type = PMIX_STRING;
  val.data.string = mine;
  if (PMIx_Put(PMIX_GLOBAL, "ferry.test", &val) != PMIX_SUCCESS) return 10;
  if (PMIx_Commit() != PMIX_SUCCESS) return 11;
  pmix_info_t collect;
  PMIX_INFO_CONSTRUCT(&collect);
  PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, NULL, PMIX_BOOL);
  collect.value.data.flag = true;
  pmix_proc_t all;
  PMIX_PROC_CONSTRUCT(&all);
  PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
  if (PMIx_Fence(&all, 1, &collect, 1) != PMIX_SUCCESS) return 12;
  uint32_t size = 0, local = 9;
  if (get_u32(&all, PMIX_JOB_SIZE, &size) != 0) return 13;
  if (get_u32(&me, PMIX_LOCAL_RANK, &local) != 0) return 14;
  pmix_proc_t peer;
  PMIX_PROC_CONSTRUCT(&peer);
  PMIX_LOAD_PROCID(&peer, me.nspace, me.rank ^ 1u);
  pmix_value_t* got = NULL;
  if (PMIx_Get(&peer, "ferry.test", NULL, 0, &got) != PMIX_SUCCESS || got == NULL ||
      got->type != PMIX_STRING)
    return 15;
  pmix_value_t* cpus = NULL;
  const char* cpusets = "?";
  if (PMIx_Get(&all, PMIX_LOCAL_CPUSETS, NULL, 0, &cpus) == PMIX_SUCCESS && cpus != NULL &&
      cpus->type == PMIX_STRING)
    cpusets = cpus->data.string;
  printf("rank %u size %u local %u cpus %s peer says %s\n", me.rank, size, local, cpusets,
         got->data.string);
  fflush(stdout);
  PMIX_VALUE_RELEASE(got);
  return PMIx_Finalize(NULL, 0) == PMIX_SUCCESS ? 0 : 16;
}

static int dynamic(void) {
  char got[128] = "-";
  if (me.rank == 0) {
    pmix_info_t info[2];
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    PMIX_INFO_LOAD(&info[0], "ferry.svc", "port-of-0", PMIX_STRING);
    pmix_persistence_t once = PMIX_PERSIST_FIRST_READ;
    PMIX_INFO_LOAD(&info[1], PMIX_PERSISTENCE, &once, PMIX_PERSIST);
    pmix_status_t rc = PMIx_Publish(info, 2);
    if (rc != PMIX_SUCCESS) snprintf(got, sizeof got, "publish: %s", PMIx_Error_string(rc));
  } else {
    pmix_pdata_t pd;
    PMIX_PDATA_CONSTRUCT(&pd);
    strcpy(pd.key, "ferry.svc");
    pmix_info_t wait;
    PMIX_INFO_CONSTRUCT(&wait);
    bool yes = true;
    PMIX_INFO_LOAD(&wait, PMIX_WAIT, &yes, PMIX_BOOL);
    pmix_status_t rc = PMIx_Lookup(&pd, 1, &wait, 1);
    if (rc == PMIX_SUCCESS && pd.value.type == PMIX_STRING)
      snprintf(got, sizeof got, "%s from rank %u", pd.value.data.string, pd.proc.rank);
    else
      snprintf(got, sizeof got, "lookup: %s", PMIx_Error_string(rc));
  }
  /* All listed on this host, libpmix would answer them itself: rank 2 is on another. */
  pmix_proc_t three[3];
  for (int i = 0; i < 3; ++i) {
    PMIX_PROC_CONSTRUCT(&three[i]);
    PMIX_LOAD_PROCID(&three[i], me.nspace, (pmix_rank_t)i);
  }
  pmix_status_t c = PMIx_Connect(three, 3, NULL, 0);
  pmix_status_t f = PMIx_Fence(three, 3, NULL, 0);
  printf("rank %u: %s; connect %s; fence %s\n", me.rank, got, PMIx_Error_string(c),
         PMIx_Error_string(f));
  fflush(stdout);
  return PMIx_Finalize(NULL, 0) == PMIX_SUCCESS ? 0 : 16;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "exchange";
  if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
    fprintf(stderr, "pmix_test_client: PMIx_Init failed\n");
    return 2;
  }
  if (strcmp(mode, "exchange") == 0) return exchange();
  if (strcmp(mode, "no-finalize") == 0) exit(0);
  if (strcmp(mode, "dynamic") == 0) return dynamic();
  if (strcmp(mode, "remote") == 0) {
    pmix_proc_t peer;
    PMIX_PROC_CONSTRUCT(&peer);
    PMIX_LOAD_PROCID(&peer, me.nspace, 2);
    pmix_value_t* got = NULL;
    pmix_status_t rc = PMIx_Get(&peer, "ferry.test", NULL, 0, &got);
    if (rc == PMIX_SUCCESS && got != NULL && got->type == PMIX_STRING)
      printf("rank %u: rank 2's data: %s\n", me.rank, got->data.string);
    else
      printf("rank %u: rank 2's data: %s\n", me.rank,
             rc == PMIX_ERR_NOT_FOUND ? "not found" : PMIx_Error_string(rc));
    fflush(stdout);
    return PMIx_Finalize(NULL, 0) == PMIX_SUCCESS ? 0 : 16;
  }
  if (strcmp(mode, "abort") == 0) {
    if (me.rank == 1) {
      PMIx_Abort(7, "asked to", NULL, 0);
      sleep(30);
      return 3;
    }
    PMIx_Fence(NULL, 0, NULL, 0);  /* held until the job is ended */
    return 4;
  }
  return 5;
}
