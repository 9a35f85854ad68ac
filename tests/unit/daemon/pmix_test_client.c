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

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "exchange";
  if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
    fprintf(stderr, "pmix_test_client: PMIx_Init failed\n");
    return 2;
  }
  if (strcmp(mode, "exchange") == 0) return exchange();
  if (strcmp(mode, "no-finalize") == 0) exit(0);
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
