// nvidia-smi's query lines, the GPUs a rank holds, and what the view and the report show.
#include <gtest/gtest.h>

#include "ferry/monitor/gpu_use.hpp"
#include "ferry/monitor/job_timeline.hpp"
#include "ferry/monitor/top_view.hpp"

namespace ferry {
namespace {

TEST(MonitorGpuUse, ReadsNvidiaSmiQueryLines) {
  auto g = parse_nvidia_smi_line("1, GPU-8f2c1e0a-7d3b-4c1e-9a6b-3e2f1d0c9b8a, 87, 30511, 81559\r");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->index, 1u);
  EXPECT_EQ(g->uuid, "GPU-8f2c1e0a-7d3b-4c1e-9a6b-3e2f1d0c9b8a");
  EXPECT_EQ(g->util_percent, 87u);
  EXPECT_EQ(g->mem_used_mib, 30511u);
  EXPECT_EQ(g->mem_total_mib, 81559u);
  auto na = parse_nvidia_smi_line("0, GPU-1, [N/A], [Not Supported], 16384");
  ASSERT_TRUE(na);
  EXPECT_EQ(na->util_percent, 0u);
  EXPECT_FALSE(parse_nvidia_smi_line("index, uuid, utilization.gpu [%], memory.used [MiB], x"));
  EXPECT_FALSE(parse_nvidia_smi_line("NVIDIA-SMI has failed because it couldn't communicate"));
  EXPECT_FALSE(parse_nvidia_smi_line("0, GPU-1, 5, 6"));
  EXPECT_FALSE(parse_nvidia_smi_line(""));
}

TEST(MonitorGpuUse, ARanksGpusByIndexOrUuid) {
  const std::vector<GpuUse> gpus = {
      {0, "GPU-a", 10, 0, 0}, {1, "GPU-b", 20, 0, 0}, {2, "GPU-c", 30, 0, 0}};
  EXPECT_EQ(gpus_of("CUDA_VISIBLE_DEVICES=0,2", gpus), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(gpus_of("CUDA_VISIBLE_DEVICES=GPU-b", gpus), (std::vector<size_t>{1}));
  EXPECT_TRUE(gpus_of("CUDA_VISIBLE_DEVICES=7", gpus).empty());
  EXPECT_TRUE(gpus_of("ASCEND_RT_VISIBLE_DEVICES=0", gpus).empty());
  EXPECT_TRUE(gpus_of("", gpus).empty());
}

TEST(MonitorGpuUse, TheViewAndTheReportShowThem) {
  TopState s;
  TopRow r;
  r.rank = 0;
  r.label = "0";
  r.host = "gpu1";
  r.state = 'R';
  r.gpu = 87;
  TopRow q = r;
  q.rank = 1;
  q.label = "1";
  q.gpu = -1;
  const auto lines = top_screen(s, top_rows(s, {r, q}), "t", {}, 80, 6);
  EXPECT_NE(lines[2].find("CPU%  GPU%"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("   87 "), std::string::npos) << lines[3];
  EXPECT_NE(lines[4].find("    - "), std::string::npos) << lines[4];
  // No GPU read anywhere: no column.
  r.gpu = -1;
  EXPECT_EQ(top_screen(s, top_rows(s, {r}), "t", {}, 80, 6)[2].find("GPU%"), std::string::npos);

  JobTimeline rec;
  rec.set_host(0, "gpu1");
  rec.host_layout(0, {"0-7"}, "NVIDIA, read with nvidia-smi every 1000 ms");
  rec.gpu_sample(0, 1, {{0, 87}, {1, 3}});
  rec.finish(2, 0);
  const std::string html = report_html(rec);
  EXPECT_NE(html.find("GPU use %"), std::string::npos);
  EXPECT_NE(html.find(">GPU 1</span>"), std::string::npos);
  EXPECT_NE(html.find("Accelerator use: NVIDIA, read with nvidia-smi"), std::string::npos);
  EXPECT_NE(trace_json(rec).find("\"GPU 1 %\""), std::string::npos);
}

}  // namespace
}  // namespace ferry
