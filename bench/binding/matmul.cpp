// A CPU-bound, multi-threaded stand-in for a training step: many short OpenMP parallel
// regions (one per matrix product, rows split statically), so every region ends in a
// barrier that waits for the slowest thread, which is where oversubscription and
// migrations hurt. Prints one line: rank, threads, the CPUs it may use, seconds, GFLOP/s.
//
//   g++ -O2 -fopenmp -o matmul matmul.cpp && OMP_NUM_THREADS=2 ./matmul --n 192 --iters 400

#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::string allowed_cpus() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Cpus_allowed_list:", 0) == 0)
      return line.substr(line.find_first_not_of(" \t", 18));
  return "?";
}

const char* rank_id() {
  for (const char* v : {"RANK", "OMPI_COMM_WORLD_RANK", "BENCH_RANK"})
    if (const char* s = std::getenv(v)) return s;
  return "0";
}

}  // namespace

int main(int argc, char** argv) {
  int n = 192, iters = 400;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--n")) n = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
  }
  std::vector<float> a(n * n), b(n * n), c(n * n);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i)  // first touch by the threads that will use the rows
    for (int j = 0; j < n; ++j) {
      a[i * n + j] = 1.0f / (1 + i + j);
      b[i * n + j] = 1.0f / n;  // each product averages a row: values stay finite
      c[i * n + j] = 0;
    }
  const auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < iters; ++it) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) {
      float* ci = &c[i * n];
      for (int j = 0; j < n; ++j) ci[j] = 0;
      for (int k = 0; k < n; ++k) {
        const float aik = a[i * n + k];
        const float* bk = &b[k * n];
        for (int j = 0; j < n; ++j) ci[j] += aik * bk[j];
      }
    }
    std::swap(a, c);  // feed the result back so nothing is optimised away
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double gflops = 2.0 * n * n * n * iters / s / 1e9;
  std::printf("rank=%s threads=%d cpus=%s time=%.3f gflops=%.2f check=%g\n", rank_id(),
              omp_get_max_threads(), allowed_cpus().c_str(), s, gflops, a[n + 1]);
  return 0;
}
