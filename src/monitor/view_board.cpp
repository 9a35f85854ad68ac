#include "ferry/monitor/view_board.hpp"

#include <nlohmann/json.hpp>

namespace ferry {

void ViewBoard::publish(std::string rows_json, std::string lines_json) {
  std::lock_guard lock(mutex_);
  rows_ = std::move(rows_json);
  if (wanted_ >= 0) {
    lines_ = std::move(lines_json);
    lines_rank_ = wanted_;
  }
}

std::string ViewBoard::rows() {
  std::lock_guard lock(mutex_);
  asked_ = std::chrono::steady_clock::now();
  return rows_;
}

bool ViewBoard::watched() const {
  std::lock_guard lock(mutex_);
  return asked_ != std::chrono::steady_clock::time_point{} &&
         std::chrono::steady_clock::now() - asked_ < std::chrono::seconds(5);
}

std::string ViewBoard::lines(int rank) {
  std::lock_guard lock(mutex_);
  wanted_ = rank;
  return lines_rank_ == rank ? lines_ : "[]";
}

int ViewBoard::wanted() const {
  std::lock_guard lock(mutex_);
  return wanted_;
}

std::string top_rows_json(const std::vector<TopRow>& rows, const std::string& title) {
  nlohmann::json a = nlohmann::json::array();
  for (const TopRow& r : rows)
    a.push_back({{"rank", r.rank},
                 {"label", r.label},
                 {"host", r.host},
                 {"state", std::string(1, r.state)},
                 {"outcome", r.outcome},
                 {"cpu", r.cpu},
                 {"rss", r.rss_mib},
                 {"threads", r.threads},
                 {"out", r.out_rate},
                 {"cores", r.cores},
                 {"devices", r.devices},
                 {"gpu", r.gpu},
                 {"last", r.last_line},
                 {"lagging", r.lagging}});
  // Lines of rank output may hold any bytes: replaced, never an exception.
  return nlohmann::json{{"title", title}, {"rows", std::move(a)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool parse_top_rows_json(const std::string& json, TopSnapshot& out) {
  auto doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("rows")) return false;
  try {
    out.title = doc.value("title", "");
    out.rows.clear();
    for (const auto& j : doc.at("rows")) {
      TopRow r;
      r.rank = j.at("rank");
      r.label = j.at("label");
      r.host = j.at("host");
      const std::string state = j.at("state");
      r.state = state.empty() ? '?' : state[0];
      r.outcome = j.at("outcome");
      r.cpu = j.at("cpu");
      r.rss_mib = j.at("rss");
      r.threads = j.at("threads");
      r.out_rate = j.at("out");
      r.cores = j.at("cores");
      r.devices = j.at("devices");
      r.gpu = j.at("gpu");
      r.last_line = j.at("last");
      r.lagging = j.at("lagging");
      out.rows.push_back(std::move(r));
    }
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return true;
}

std::string lines_json(const std::vector<std::string>& lines) {
  return nlohmann::json(lines).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool parse_lines_json(const std::string& json, std::vector<std::string>& out) {
  auto doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_array()) return false;
  out.clear();
  for (const auto& l : doc)
    if (l.is_string()) out.push_back(l.get<std::string>());
  return true;
}

std::vector<int> KeyDecoder::feed(const char* data, size_t n) {
  std::vector<int> keys;
  for (size_t i = 0; i < n; ++i) {
    const char c = data[i];
    if (!escape_.empty()) {
      escape_ += c;
      if (escape_.size() < 3) continue;
      const int key = escape_[2] == 'A' ? kUp : (escape_[2] == 'B' ? kDown : -1);
      escape_.clear();
      if (key >= 0) keys.push_back(key);
      continue;
    }
    if (c == 0x1b && i + 1 < n) {
      escape_ = c;
      continue;
    }
    keys.push_back(static_cast<unsigned char>(c));
  }
  return keys;
}

}  // namespace ferry
