#include "toml_reader.hpp"

#include <algorithm>
#include <cstdio>

namespace ferry::cli_detail {

const char* type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

std::string TomlReader::where(const toml::source_region& region) const {
  return file_ + ":" + std::to_string(region.begin.line);
}

void TomlReader::fail(const toml::source_region& region, const std::string& message) {
  if (!error_) error_ = make_error(where(region) + ": " + message);
}

void TomlReader::check_keys(const toml::table& table, const std::string& section,
                            const std::vector<std::string>& known) {
  if (skip()) return;
  for (auto&& [key, node] : table) {
    std::string k(key.str());
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string list;
    for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
    fail(key.source(), "unknown key '" + k + "' in " + section + " (known: " + list + ")");
    return;
  }
}

void TomlReader::get(const toml::table& t, const char* key, bool& into) {
  const toml::node* n = t.get(key);
  if (skip() || !n) return;
  if (auto v = n->value_exact<bool>())
    into = *v;
  else
    fail(n->source(), std::string(key) + " must be true or false, not " + type_name(*n));
}

void TomlReader::get(const toml::table& t, const char* key, std::string& into) {
  const toml::node* n = t.get(key);
  if (skip() || !n) return;
  auto v = n->value_exact<std::string>();
  if (!v) {
    fail(n->source(), std::string(key) + " must be a string, not " + type_name(*n));
  } else if (v->empty()) {
    fail(n->source(), std::string(key) + " must not be empty");
  } else if (v->find('\0') != std::string::npos) {
    fail(n->source(), std::string(key) + " must not contain a NUL character");
  } else {
    into = *v;
  }
}

void TomlReader::get(const toml::table& t, const char* key, long long& into, long long lo,
                     long long hi) {
  const toml::node* n = t.get(key);
  if (skip() || !n) return;
  auto v = n->value_exact<int64_t>();
  std::string range = std::to_string(lo) + "-" + std::to_string(hi);
  if (!v)
    fail(n->source(),
         std::string(key) + " must be an integer (" + range + "), not " + type_name(*n));
  else if (*v < lo || *v > hi)
    fail(n->source(),
         "bad " + std::string(key) + " " + std::to_string(*v) + " (expected " + range + ")");
  else
    into = *v;
}

void TomlReader::get(const toml::table& t, const char* key, int& into, long long lo, long long hi) {
  long long v = into;
  get(t, key, v, lo, hi);
  if (!skip()) into = static_cast<int>(v);
}

namespace {

// "3600", "0.5": a range as people write it, not std::to_string's "3600.000000".
std::string plain_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

void TomlReader::get(const toml::table& t, const char* key, double& into, double lo, double hi) {
  const toml::node* n = t.get(key);
  if (skip() || !n) return;
  std::optional<double> v;
  if (auto i = n->value_exact<int64_t>())
    v = static_cast<double>(*i);
  else if (auto d = n->value_exact<double>())
    v = *d;
  if (!v)
    fail(n->source(), std::string(key) + " must be a number, not " + type_name(*n));
  else if (!(*v >= lo && *v <= hi))
    fail(n->source(), "bad " + std::string(key) + " (expected " + plain_number(lo) + " to " +
                          plain_number(hi) + ")");
  else
    into = *v;
}

void TomlReader::get(const toml::table& t, const char* key, std::vector<int>& into, long long lo,
                     long long hi) {
  const toml::node* n = t.get(key);
  if (skip() || !n) return;
  const toml::array* a = n->as_array();
  if (!a) {
    fail(n->source(),
         std::string(key) + " must be an array of integers such as [0, 1], not " + type_name(*n));
    return;
  }
  std::vector<int> out;
  for (const toml::node& el : *a) {
    auto v = el.value_exact<int64_t>();
    if (!v || *v < lo || *v > hi) {
      fail(el.source(), std::string(key) + ": expected integers " + std::to_string(lo) + "-" +
                            std::to_string(hi) + ", found " + type_name(el) +
                            (v ? " " + std::to_string(*v) : ""));
      return;
    }
    out.push_back(static_cast<int>(*v));
  }
  into = std::move(out);
}

void TomlReader::get(const toml::table& t, const char* key, std::vector<std::string>& into,
                     bool single_ok) {
  const toml::node* n = t.get(key);
  if (skip() || !n) return;
  if (single_ok && n->is_string()) {
    std::string s;
    get(t, key, s);
    if (!skip()) into = {s};
    return;
  }
  const toml::array* a = n->as_array();
  if (!a) {
    fail(n->source(), std::string(key) + " must be an array of strings, not " + type_name(*n));
    return;
  }
  std::vector<std::string> out;
  for (const toml::node& el : *a) {
    auto v = el.value_exact<std::string>();
    if (!v || v->find('\0') != std::string::npos) {
      fail(el.source(), std::string(key) + ": expected strings, found " + type_name(el));
      return;
    }
    out.push_back(*v);
  }
  into = std::move(out);
}

const toml::table* TomlReader::table(const toml::table& t, const char* key) {
  const toml::node* n = t.get(key);
  if (skip() || !n) return nullptr;
  const toml::table* sub = n->as_table();
  if (!sub)
    fail(n->source(), std::string(key) + " must be a table ([" + key + "]), not " + type_name(*n));
  return sub;
}

}  // namespace ferry::cli_detail
