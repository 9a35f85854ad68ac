#include "ferry/frontend/check_table.hpp"

#include <algorithm>
#include <cstddef>
#include <map>

namespace ferry {
namespace {

constexpr size_t kSoftwareColumns = 5;  // python3, torch, NCCL, CUDA, MPI (host_check.cpp)

std::vector<std::string> header() {
  return {"host",      "reachable", "ferryd",  "cores", "NUMA", "accelerators/slots",
          "interface", "preflight", "python3", "torch", "NCCL", "CUDA",
          "MPI"};
}

// A software line "torch 2.0.1" without its name.
std::string version_of(const std::vector<std::string>& software, size_t k) {
  if (k >= software.size()) return "?";
  const std::string& line = software[k];
  const size_t sp = line.find(' ');
  return sp == std::string::npos ? line : line.substr(sp + 1);
}

std::vector<std::string> cells(const CheckRow& r) {
  std::vector<std::string> c = {r.host, r.reachable ? "yes" : "no"};
  if (!r.reported) {
    c.resize(header().size(), "-");
    return c;
  }
  const wire::CheckReport& p = r.report;
  c.push_back(p.version);
  c.push_back(std::to_string(p.cores));
  c.push_back(std::to_string(p.numa_nodes));
  c.push_back(std::to_string(p.accelerators) + "/" + std::to_string(r.slots) +
              (p.accelerator_kind.empty() ? "" : " " + p.accelerator_kind));
  c.push_back(r.interface.empty() ? "-"
                                  : r.interface + (r.speed.empty() ? "" : " (" + r.speed + ")"));
  c.push_back(r.preflight);
  for (size_t k = 0; k < kSoftwareColumns; ++k) c.push_back(version_of(p.software, k));
  return c;
}

}  // namespace

std::string format_check_table(const std::vector<CheckRow>& rows) {
  std::vector<std::vector<std::string>> table = {header()};
  for (const CheckRow& r : rows) table.push_back(cells(r));
  // Mark the values that differ from the most common one of their column, among the hosts
  // that reported (not the cores or slots, which may differ by design).
  bool marked = false;
  for (size_t col : {2u, 6u, 7u, 8u, 9u, 10u, 11u, 12u}) {
    std::map<std::string, int> count;
    // The interface's speed may differ; its name should not.
    auto key = [&](size_t i) {
      const std::string& v = table[i + 1][col];
      return col == 6 ? v.substr(0, v.find(' ')) : v;
    };
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].reported) ++count[key(i)];
    if (count.size() <= 1) continue;
    const auto common = std::max_element(count.begin(), count.end(), [](auto& a, auto& b) {
                          return a.second < b.second;
                        })->first;
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].reported && key(i) != common) {
        table[i + 1][col] += " *";
        marked = true;
      }
  }
  std::vector<size_t> width(header().size(), 0);
  for (const auto& row : table)
    for (size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size());
  std::string text;
  for (const auto& row : table) {
    std::string line;
    for (size_t k = 0; k < row.size(); ++k)
      line += row[k] + (k + 1 < row.size() ? std::string(width[k] - row[k].size() + 2, ' ') : "");
    text += line + "\n";
  }
  for (const CheckRow& r : rows)
    if (!r.why.empty()) text += (r.why.starts_with(r.host) ? "" : r.host + ": ") + r.why + "\n";
  if (marked) text += "*: differs between the hosts\n";
  return text;
}

bool check_passed(const std::vector<CheckRow>& rows) {
  return std::all_of(rows.begin(), rows.end(), [](const CheckRow& r) {
    return r.reachable && r.reported && r.preflight != "failed";
  });
}

}  // namespace ferry
