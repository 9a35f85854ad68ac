// The live view without a terminal: rows, keys, and screens of 80x24 and 200 columns.
#include <gtest/gtest.h>

#include "ferry/monitor/output_tail.hpp"
#include "ferry/monitor/top_view.hpp"

namespace ferry {
namespace {

std::vector<TopRow> sample_rows() {
  std::vector<TopRow> rows;
  for (int r = 0; r < 6; ++r) {
    TopRow row;
    row.rank = r;
    row.label = std::to_string(r);
    row.host = r < 3 ? "node1" : "node2";
    row.state = r == 4 ? 'T' : 'R';
    row.cpu = r == 4 ? 0 : 90 + r;
    row.rss_mib = 100.0 * (6 - r);
    row.threads = 4;
    row.out_rate = r * 10;
    row.cores = std::to_string(r);
    row.devices = "CUDA_VISIBLE_DEVICES=" + std::to_string(r);
    row.last_line = "step " + std::to_string(r * 100) + " loss 0.5";
    row.lagging = r == 4;
    rows.push_back(row);
  }
  return rows;
}

// The columns of a screen line, escapes (inverse video) left out.
size_t columns(const std::string& line) {
  std::string plain;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      while (i < line.size() && line[i] != 'm') ++i;
      continue;
    }
    plain += line[i];
  }
  size_t n = 0;
  for (unsigned char c : plain) n += (c & 0xc0) != 0x80 ? 1 : 0;
  return n;
}

TEST(MonitorTopView, FitsEightyByTwentyFourAndTwoHundredColumns) {
  TopState s;
  const auto rows = top_rows(s, sample_rows());
  for (auto [w, h] : {std::pair{80, 24}, std::pair{200, 50}}) {
    const auto lines = top_screen(s, rows, "ferry top", {}, w, h);
    ASSERT_EQ(lines.size(), static_cast<size_t>(h));
    for (const auto& line : lines) EXPECT_EQ(columns(line), static_cast<size_t>(w)) << line;
    EXPECT_NE(lines[3].find("node1"), std::string::npos);
    EXPECT_NE(lines[3].find("step 0 loss"), std::string::npos);
    // The devices only where there is room.
    EXPECT_EQ(lines[2].find("DEVICES") != std::string::npos, w >= 120) << lines[2];
  }
  // The stopped straggler is marked.
  const auto lines = top_screen(s, rows, "t", {}, 80, 24);
  EXPECT_EQ(lines[7].rfind("!    4 node2      stopped", 0), 0u) << lines[7];
  // The selected row (the first) and the header are inverse.
  EXPECT_EQ(lines[2].rfind("\x1b[7m", 0), 0u);
  EXPECT_EQ(lines[3].rfind("\x1b[7m", 0), 0u);
  EXPECT_EQ(lines[4].rfind("\x1b[7m", 0), std::string::npos);
}

TEST(MonitorTopView, KeysSortFilterToggleAndLeave) {
  TopState s;
  auto rows = top_rows(s, sample_rows());
  EXPECT_EQ(top_key(s, 's', rows), TopAction::kRedraw);  // host
  EXPECT_EQ(top_key(s, 's', rows), TopAction::kRedraw);  // state
  EXPECT_EQ(top_key(s, 's', rows), TopAction::kRedraw);  // CPU, busiest first
  rows = top_rows(s, sample_rows());
  EXPECT_EQ(rows.front().rank, 5);
  EXPECT_EQ(rows.back().rank, 4);
  top_key(s, 'r', rows);
  EXPECT_EQ(top_rows(s, sample_rows()).front().rank, 4);
  // A filter by host, typed after '/', applied by Enter; by rank; dropped by Esc.
  for (int k : std::initializer_list<int>{'/', 'n', 'o', 'd', 'e', '2', '\r'}) top_key(s, k, rows);
  EXPECT_EQ(s.filter, "node2");
  EXPECT_EQ(top_rows(s, sample_rows()).size(), 3u);
  for (int k : std::initializer_list<int>{'/', 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, '1', '\r'})
    top_key(s, k, rows);
  EXPECT_EQ(s.filter, "1");
  ASSERT_EQ(top_rows(s, sample_rows()).size(), 1u);
  for (int k : std::initializer_list<int>{'/', 'x', 0x1b}) top_key(s, k, rows);
  EXPECT_EQ(s.filter, "1");
  for (int k : std::initializer_list<int>{'/', 0x7f, '\r'}) top_key(s, k, rows);
  EXPECT_EQ(top_rows(s, sample_rows()).size(), 6u);
  // Per host: two rows, summed.
  top_key(s, 'h', rows);
  s.sort = TopState::Sort::kRank;
  s.reverse = false;
  const auto hosts = top_rows(s, sample_rows());
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].host, "node1");
  EXPECT_DOUBLE_EQ(hosts[0].cpu, 90 + 91 + 92);
  EXPECT_EQ(hosts[0].threads, 3u);  // ranks
  EXPECT_EQ(hosts[1].last_line, "2 run 1 stopped");
  EXPECT_TRUE(hosts[1].lagging);
  EXPECT_EQ(top_key(s, 'q', hosts), TopAction::kLeave);
}

TEST(MonitorTopView, OneRanksOutputOpensAndCloses) {
  TopState s;
  const auto rows = top_rows(s, sample_rows());
  top_key(s, 'j', rows);
  top_key(s, kDown, rows);
  top_key(s, kUp, rows);
  EXPECT_EQ(s.selected, 1u);
  top_key(s, 'o', rows);
  ASSERT_TRUE(s.output);
  EXPECT_EQ(s.output_rank, 1);
  std::vector<std::string> out;
  out.reserve(40);
  for (int i = 0; i < 40; ++i) out.push_back("line " + std::to_string(i));
  const auto lines = top_screen(s, rows, "t", out, 80, 24);
  EXPECT_NE(lines[1].find("output of rank 1"), std::string::npos);
  EXPECT_EQ(lines[2].rfind("line 18", 0), 0u);  // the newest lines that fit
  EXPECT_EQ(lines[23].rfind("line 39", 0), 0u);
  EXPECT_EQ(top_key(s, 'q', rows), TopAction::kRedraw);  // back to the table, not out
  EXPECT_FALSE(s.output);
}

TEST(MonitorTopView, ControlCharactersAndUtf8TakeOneColumnEach) {
  EXPECT_EQ(fit_columns("a\tb\x1b[31mc", 6), "a?b?[3");
  EXPECT_EQ(fit_columns("λx", 4), "λx  ");
  EXPECT_EQ(fit_columns("\xff", 2), "? ");
  EXPECT_EQ(fit_columns("abc", 0), "");
}

TEST(MonitorOutputTail, KeepsTheLastLinesOfEachRankBounded) {
  OutputTail t;
  t.append(0, "one\ntwo\r\nthr");
  EXPECT_EQ(t.last_line(0), "thr");
  t.append(0, "ee\n");
  EXPECT_EQ(t.last_line(0), "three");
  EXPECT_EQ(t.lines(0), (std::vector<std::string>{"one", "two", "three"}));
  for (int i = 0; i < 100; ++i) t.append(1, "x" + std::to_string(i) + "\n");
  EXPECT_EQ(t.lines(1).size(), OutputTail::kLines);
  EXPECT_EQ(t.lines(1).front(), "x50");
  t.append(2, std::string(1000, 'y') + "\n");
  EXPECT_EQ(t.last_line(2).size(), OutputTail::kLineBytes);
  EXPECT_EQ(t.last_line(3), "");
}

}  // namespace
}  // namespace ferry
