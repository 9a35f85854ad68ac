#include "ferry/rendezvous/pmi_wire.hpp"

#include <cctype>

namespace ferry {
namespace {

// MPICH pmi_wire.c IS_KEY: alnum, '_', '-', '/'.
bool is_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '/';
}

// Splits "key" or "key=value" into its parts; false when the key is malformed.
bool split_token(std::string_view tok, std::string& key, std::string& value) {
  auto eq = tok.find('=');
  std::string_view k = tok.substr(0, eq);
  if (k.empty()) return false;
  for (char c : k)
    if (!is_key_char(c)) return false;
  key.assign(k);
  value.assign(eq == std::string_view::npos ? std::string_view() : tok.substr(eq + 1));
  return true;
}

}  // namespace

std::optional<std::string_view> PmiCommand::get(std::string_view key) const {
  for (const auto& [k, v] : args)
    if (k == key) return std::string_view(v);
  return std::nullopt;
}

Result<PmiCommand> parse_pmi_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.substr(0, 4) != "cmd=") return make_error("PMI line does not start with cmd=");
  PmiCommand c;
  std::size_t i = 0;
  bool first = true;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size()) break;
    std::size_t j = i;
    // A value runs to the next space; a backslash keeps the next character (even a space)
    // in the value, as MPICH's SKIP_VAL does.
    while (j < line.size() && line[j] != ' ') j += (line[j] == '\\' && j + 1 < line.size()) ? 2 : 1;
    std::string key, value;
    if (!split_token(line.substr(i, j - i), key, value))
      return make_error("malformed PMI token '" + std::string(line.substr(i, j - i)) + "'");
    if (first) {
      if (value.empty()) return make_error("empty PMI command name");
      c.cmd = std::move(value);
      first = false;
    } else {
      c.args.emplace_back(std::move(key), std::move(value));
    }
    i = j;
  }
  for (char ch : line)
    if (ch == '\0' || ch == '\t') return make_error("control character in a PMI line");
  return c;
}

void PmiReader::feed(std::string_view bytes) {
  if (error_) return;
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
}

Result<std::optional<PmiCommand>> PmiReader::fail(std::string why) {
  error_ = why;
  buf_.clear();
  pos_ = 0;
  return make_error(std::move(why));
}

Result<std::optional<PmiCommand>> PmiReader::next() {
  if (error_) return make_error(*error_);
  for (;;) {
    auto nl = buf_.find('\n', pos_);
    if (nl == std::string::npos) {
      if (buf_.size() - pos_ > max_line_) return fail("PMI line longer than the limit");
      return std::optional<PmiCommand>();
    }
    if (nl - pos_ > max_line_) return fail("PMI line longer than the limit");
    std::string_view line(buf_.data() + pos_, nl - pos_);
    pos_ = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (multi_) {
      // Inside `mcmd=NAME` ... `endcmd`: one key=value per line (values may hold spaces).
      if (line == "endcmd") {
        auto done = std::move(*multi_);
        multi_.reset();
        return std::optional<PmiCommand>(std::move(done));
      }
      if (line.empty()) continue;
      std::string key, value;
      if (!split_token(line, key, value)) return fail("malformed line in a PMI mcmd block");
      if (multi_->args.size() >= 4096) return fail("PMI mcmd block too long");
      multi_->args.emplace_back(std::move(key), std::move(value));
      continue;
    }
    if (line.empty()) continue;
    if (line.substr(0, 5) == "mcmd=") {
      if (line.size() == 5) return fail("empty PMI mcmd name");
      multi_ = PmiCommand{};
      multi_->cmd = std::string(line.substr(5));
      multi_->multi = true;
      continue;
    }
    auto c = parse_pmi_line(line);
    if (!c) return fail(c.error().message);
    return std::optional<PmiCommand>(std::move(c.value()));
  }
}

std::string format_pmi(std::string_view cmd,
                       const std::vector<std::pair<std::string, std::string>>& args) {
  std::string out = "cmd=";
  out += cmd;
  for (const auto& [k, v] : args) {
    out += ' ';
    out += k;
    out += '=';
    out += v;
  }
  out += '\n';
  return out;
}

}  // namespace ferry
