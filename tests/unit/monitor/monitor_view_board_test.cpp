// A detached job's view as `ferry top` gets it: the board, its JSON lines, the keys.
#include <gtest/gtest.h>

#include "ferry/monitor/view_board.hpp"

namespace ferry {
namespace {

TEST(MonitorViewBoard, RowsRoundTripAndAreOneLine) {
  TopRow r;
  r.rank = 3;
  r.label = "3";
  r.host = "node2";
  r.state = 'T';
  r.cpu = 12.5;
  r.rss_mib = 100;
  r.threads = 7;
  r.out_rate = 42;
  r.cores = "0-3";
  r.devices = "CUDA_VISIBLE_DEVICES=1";
  r.gpu = 87;
  r.last_line = "loss\n0.5 \xff";  // any bytes a rank printed
  r.lagging = true;
  const std::string json = top_rows_json({r}, "ferry top  1 of 1");
  EXPECT_EQ(json.find('\n'), std::string::npos);
  TopSnapshot back;
  ASSERT_TRUE(parse_top_rows_json(json, back));
  EXPECT_EQ(back.title, "ferry top  1 of 1");
  ASSERT_EQ(back.rows.size(), 1u);
  const TopRow& b = back.rows[0];
  EXPECT_EQ(b.rank, 3);
  EXPECT_EQ(b.host, "node2");
  EXPECT_EQ(b.state, 'T');
  EXPECT_DOUBLE_EQ(b.cpu, 12.5);
  EXPECT_EQ(b.threads, 7u);
  EXPECT_EQ(b.cores, "0-3");
  EXPECT_DOUBLE_EQ(b.gpu, 87);
  EXPECT_TRUE(b.lagging);
  EXPECT_EQ(b.last_line.substr(0, 9), "loss\n0.5 ");
  EXPECT_FALSE(parse_top_rows_json("no rows yet", back));
  EXPECT_FALSE(parse_top_rows_json(R"({"rows":[{"rank":"x"}]})", back));
  std::vector<std::string> lines;
  ASSERT_TRUE(parse_lines_json(lines_json({"a", "b"}), lines));
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b"}));
}

TEST(MonitorViewBoard, PublishesWhileWatchedAndTheWantedRanksLines) {
  ViewBoard board;
  EXPECT_FALSE(board.watched());
  EXPECT_EQ(board.rows(), "");  // asking makes it watched
  EXPECT_TRUE(board.watched());
  EXPECT_EQ(board.wanted(), -1);
  board.publish("R1", "ignored: nobody wants lines");
  EXPECT_EQ(board.rows(), "R1");
  EXPECT_EQ(board.lines(2), "[]");  // wanted from now on
  EXPECT_EQ(board.wanted(), 2);
  board.publish("R2", R"(["x"])");
  EXPECT_EQ(board.lines(2), R"(["x"])");
  EXPECT_EQ(board.lines(5), "[]");  // another rank's: not yet
}

TEST(MonitorViewBoard, KeysAndArrows) {
  KeyDecoder d;
  EXPECT_EQ(d.feed("q", 1), (std::vector<int>{'q'}));
  EXPECT_EQ(d.feed("\x1b[A\x1b[Bj", 7), (std::vector<int>{kUp, kDown, 'j'}));
  EXPECT_EQ(d.feed("\x1b", 1), (std::vector<int>{0x1b}));  // Esc alone
  EXPECT_EQ(d.feed("\x1b[", 2), (std::vector<int>{}));     // an arrow cut between reads
  EXPECT_EQ(d.feed("A", 1), (std::vector<int>{kUp}));
  EXPECT_EQ(d.feed("\x1bOB", 3), (std::vector<int>{kDown}));
}

}  // namespace
}  // namespace ferry
