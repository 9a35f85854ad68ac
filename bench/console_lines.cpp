// A micro-benchmark of the console's line path alone (ConsoleOutput: tags, the unfinished
// line's check for progress bars, buffers), for before/after comparisons of src/output/:
// 4 ranks' 256 KiB chunks of L-byte lines, tagged, written to /dev/null, best of 5 rounds.
// "split": each chunk cut mid-line into two writes (the unfinished-line path). Built by
// hand against a tree's sources (see bench/README.md, "The console's line path"):
//   console_lines L MB [split]
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ferry/output/console_output.hpp"

using namespace ferry;

int main(int argc, char** argv) {
  const int len = std::atoi(argv[1]);
  const size_t mb = std::strtoul(argv[2], nullptr, 10);
  const bool split = argc > 3 && std::string(argv[3]) == "split";
  const int ranks = 4;
  std::string chunk;
  while (chunk.size() + len <= 256 * 1024) {
    chunk.append(len - 1, 'x');
    chunk.push_back('\n');
  }
  const int fd = ::open("/dev/null", O_WRONLY);
  OutputOptions o;
  o.world_size = ranks;
  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    ConsoleOutput c(o, fd, fd);
    size_t done = 0;
    const size_t cut = chunk.size() / 3 + 7;
    auto t0 = std::chrono::steady_clock::now();
    while (done < (mb << 20)) {
      for (int r = 0; r < ranks; ++r) {
        if (split) {
          c.write(r, StreamId::kStdout, std::string_view(chunk).substr(0, cut));
          c.write(r, StreamId::kStdout, std::string_view(chunk).substr(cut));
        } else {
          c.write(r, StreamId::kStdout, chunk);
        }
        done += chunk.size();
      }
      c.flush();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
  }
  std::printf("%d-byte lines%s: %.0f MB/s (best of 5, %zu MB)\n", len, split ? ", split" : "",
              static_cast<double>(mb) / best, mb);
}
