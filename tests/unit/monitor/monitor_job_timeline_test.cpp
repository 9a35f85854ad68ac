// The job's record, and what --trace and --report make of it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ferry/monitor/job_timeline.hpp"

namespace ferry {
namespace {

TEST(MonitorJobTimeline, ASeriesHalvesItsResolutionWhenFull) {
  Series s;
  for (int i = 0; i < 10'000; ++i) s.add(i, i % 2 ? 100 : 0);
  EXPECT_LE(s.points().size(), Series::kMaxPoints);
  EXPECT_GT(s.points().size(), Series::kMaxPoints / 2 - 1);
  // Means survive the merging, and the last point is the latest time.
  for (const auto& p : s.points()) EXPECT_NEAR(p.v, 50, 1);
  EXPECT_FLOAT_EQ(s.points().back().t, 9999);
}

// Two hosts, three ranks, a failure, a restart and a straggler.
JobTimeline sample_record() {
  JobTimeline rec;
  rec.begin("python3 train.py --lr <0.1>", "2026-12-02 10:00:00 UTC");
  rec.set_host(0, "node1");
  rec.set_host(1, "node2");
  rec.host_layout(0, {"0-1", "2-3"}, "");
  rec.rank_started(0, 0, "0", 0, 0.1);
  rec.rank_started(0, 1, "1", 0, 0.1);
  rec.rank_started(0, 2, "2", 1, 0.2);
  rec.sample(0, 1.0, {{0, 99, 120, "0-1", "CUDA_VISIBLE_DEVICES=0"}, {1, 97, 130, "1-2", ""}});
  rec.sample(1, 1.0, {{2, 3, 50, "0", ""}});
  rec.rank_output(0, 0.5);
  rec.lagging(2, 1.5, true);
  rec.mark(1.5, "straggler", "rank 2 on node2 has used 3% CPU");
  rec.rank_ended(2, 2.0, "exit 3", true, 1800, 100, 2048);
  rec.mark(2.0, "failure", "rank 2 exited with 3");
  rec.rank_ended(0, 2.1, "SIGTERM", false, 2000, 1900, 1024);
  rec.rank_ended(1, 2.1, "SIGTERM", false, 2000, 1900, 1024);
  rec.lagging(2, 2.2, true);  // ended: lags no more
  rec.mark(2.5, "restart", "attempt 1");
  rec.rank_started(1, 0, "0", 0, 2.6);
  rec.finish(3.0, 3);
  return rec;
}

TEST(MonitorJobTimeline, TracksEndAndOpenOnesCloseAtTheFinish) {
  const JobTimeline rec = sample_record();
  ASSERT_EQ(rec.ranks().size(), 4u);
  EXPECT_EQ(rec.ranks()[0].first_output, 0.5);
  EXPECT_EQ(rec.ranks()[1].first_output, -1);
  EXPECT_EQ(rec.ranks()[2].lagging.size(), 1u);
  EXPECT_EQ(rec.ranks()[2].lagging[0].second, 2.0);  // closed by its end
  EXPECT_EQ(rec.ranks()[3].attempt, 1);
  EXPECT_EQ(rec.ranks()[3].end, 3.0);
  EXPECT_EQ(rec.ranks()[3].outcome, "still running");
  EXPECT_EQ(rec.hosts()[0].cpu.points().size(), 1u);
  EXPECT_FLOAT_EQ(rec.hosts()[0].cpu.points()[0].v, 196);
  EXPECT_EQ(rec.ranks()[0].devices, "CUDA_VISIBLE_DEVICES=0");
}

TEST(MonitorJobTimeline, TraceIsChromeTraceJson) {
  const auto doc = nlohmann::json::parse(trace_json(sample_record()));
  const auto& events = doc.at("traceEvents");
  int slices = 0, names = 0, counters = 0, instants = 0;
  for (const auto& e : events) {
    const std::string ph = e.at("ph");
    if (ph == "X" && e.at("cat") != "straggler") {
      ++slices;
      EXPECT_GE(e.at("dur").get<double>(), 0);
    }
    if (ph == "M" && e.at("name") == "thread_name") ++names;
    if (ph == "C") ++counters;
    if (ph == "i") ++instants;
  }
  EXPECT_EQ(slices, 4);  // every rank life, the restarted one too
  EXPECT_EQ(names, 3);   // one thread per rank and host
  EXPECT_GT(counters, 3);
  EXPECT_EQ(instants, 1 + 3);  // rank 0's first output; three marks
  EXPECT_EQ(doc.at("otherData").at("exit status"), 3);
  // Slices are in microseconds.
  for (const auto& e : events) {
    if (e.at("ph") == "X" && e.at("tid") == 3 && e.at("cat") != "straggler") {
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 2e5);
    }
  }
}

TEST(MonitorJobTimeline, ReportIsOneSelfContainedPage) {
  const std::string html = report_html(sample_record());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);  // nothing fetched
  EXPECT_NE(html.find("python3 train.py --lr &lt;0.1&gt;"), std::string::npos);
  EXPECT_NE(html.find("exit status 3; 2 hosts, 3 ranks, 1 failed"), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"timeline\""), std::string::npos);
  EXPECT_NE(html.find("class=\"bar failed\""), std::string::npos);
  EXPECT_NE(html.find("class=\"lag\""), std::string::npos);
  EXPECT_NE(html.find("restart: attempt 1"), std::string::npos);
  // The binding map: node1's NUMA rows; CPU 1 is held by ranks 0 and 1 of the first attempt
  // (shared), but the map shows the last attempt's: rank 0 alone (its CPUs came with its
  // first sample only in attempt 0, so attempt 1 shows none).
  EXPECT_NE(html.find("<th>NUMA 1</th>"), std::string::npos);
  EXPECT_NE(html.find("Accelerator use: not read (NVIDIA GPUs are read with nvidia-smi"),
            std::string::npos);
  EXPECT_NE(html.find("<td>exit 3</td>"), std::string::npos);
  EXPECT_NE(html.find("2.0 MiB"), std::string::npos);
}

TEST(MonitorJobTimeline, BindingMapMarksSharedCpus) {
  JobTimeline rec;
  rec.set_host(0, "node1");
  rec.host_layout(0, {"0-3"}, "");
  rec.rank_started(0, 0, "0", 0, 0);
  rec.rank_started(0, 1, "1", 0, 0);
  rec.sample(0, 1, {{0, 100, 1, "0-1", ""}, {1, 100, 1, "1", ""}});
  rec.finish(2, 0);
  const std::string html = report_html(rec);
  EXPECT_NE(html.find("<td class=\"held\"><span class=\"cpu\">0</span><br>0</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"shared\"><span class=\"cpu\">1</span><br>0,1</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"free\"><span class=\"cpu\">3</span></td>"), std::string::npos);
}

}  // namespace
}  // namespace ferry
