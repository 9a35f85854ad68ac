// The console held behind the live view: kept in order, printed on release, bounded.
#include "ferry/output/held_output.hpp"

#include <gtest/gtest.h>

namespace ferry {
namespace {

// Records what reaches the console, in order.
class Recorder : public OutputSink {
 public:
  void write(int rank, StreamId s, std::string_view b) override {
    log += "w" + std::to_string(rank) + (s == StreamId::kStdout ? "o" : "e") + ":" +
           std::string(b) + ";";
  }
  void close_stream(int rank, StreamId) override { log += "c" + std::to_string(rank) + ";"; }
  void flush() override { log += "f;"; }
  void relabel(int rank, int shown) override {
    log += "r" + std::to_string(rank) + ">" + std::to_string(shown) + ";";
  }
  std::string log;
};

TEST(HeldOutput, PassesThroughUntilHeldThenKeepsEverythingInOrder) {
  Recorder inner;
  std::string lines;
  HeldOutput held(inner, [&](StreamId, const std::string& l) {
    lines += l;
    inner.log += "L;";
  });
  held.write(0, StreamId::kStdout, "a\n");
  held.print_line(StreamId::kStderr, "x\n");
  EXPECT_EQ(inner.log, "w0o:a\n;L;");
  held.hold();
  held.write(1, StreamId::kStderr, "b");
  held.print_line(StreamId::kStderr, "y\n");
  held.relabel(1, 3);
  held.close_stream(1, StreamId::kStderr);
  held.flush();
  EXPECT_EQ(inner.log, "w0o:a\n;L;");  // nothing reached the console
  held.release("ferryrun");
  EXPECT_EQ(inner.log, "w0o:a\n;L;w1e:b;L;r1>3;c1;");
  EXPECT_EQ(lines, "x\ny\n");
  held.write(2, StreamId::kStdout, "c");
  EXPECT_EQ(inner.log.substr(inner.log.size() - 6), "w2o:c;");
}

TEST(HeldOutput, PastTheLimitOutputIsDroppedAndSaidOnce) {
  Recorder inner;
  std::string lines;
  HeldOutput held(
      inner, [&](StreamId, const std::string& l) { lines += l; }, 10);
  held.hold();
  held.write(0, StreamId::kStdout, "12345678");
  held.write(0, StreamId::kStdout, "abcdef");  // over 10: dropped
  held.write(0, StreamId::kStdout, "z");
  held.release("ferryrun");
  EXPECT_EQ(inner.log, "w0o:12345678;w0o:z;");
  EXPECT_EQ(lines,
            "ferryrun: 6 bytes of output came while the live view was up and were not kept "
            "(over 0 MiB); --output-filename keeps them all\n");
}

}  // namespace
}  // namespace ferry
