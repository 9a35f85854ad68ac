// `--mca plm_rsh_args`: ssh's own options, read one by one.

#include "ferry/cli/ssh_args.hpp"

#include <algorithm>
#include <cctype>

#include "cli_text.hpp"
#include "ferry/common/text.hpp"

namespace ferry {
namespace {

using cli_detail::parse_int;

Status set_port(const std::string& value, SshSettings& ssh, const std::string& word) {
  auto n = parse_int(value, 1, 65535);
  if (!n) return make_error("bad port '" + value + "' in '" + word + "' (expected 1-65535)");
  ssh.port = static_cast<int>(*n);
  return {};
}

Status set_user(const std::string& value, SshSettings& ssh, const std::string& word) {
  bool ok =
      !value.empty() && value[0] != '-' && std::all_of(value.begin(), value.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
      });
  if (!ok) return make_error("bad user '" + value + "' in '" + word + "'");
  ssh.user = value;
  return {};
}

Status apply_o(const std::string& option, SshSettings& ssh, int& heartbeat_s,
               std::vector<std::string>& notes) {
  auto sep = option.find_first_of("= ");
  if (sep == std::string::npos || sep == 0 || sep + 1 >= option.size())
    return make_error("'-o " + option + "' is not Key=Value");
  std::string key = lower(option.substr(0, sep));
  std::string value(trim(std::string_view(option).substr(sep + 1)));
  if (value.starts_with('=')) value = std::string(trim(std::string_view(value).substr(1)));
  if (key == "port") return set_port(value, ssh, "-o " + option);
  if (key == "user") return set_user(value, ssh, "-o " + option);
  if (key == "identityfile") {
    ssh.identity_file = value;
    return {};
  }
  if (key == "stricthostkeychecking") {
    std::string v = lower(value);
    if (v == "no" || v == "off" || v == "accept-new") {
      ssh.accept_new = true;
      if (v != "accept-new")
        notes.push_back("-o " + option +
                        ": unknown host keys are recorded (as accept-new); "
                        "a changed host key is still refused");
      return {};
    }
    if (v == "yes" || v == "ask") {
      ssh.accept_new = false;
      return {};
    }
    return make_error("bad value in '-o " + option + "' (expected yes, no or accept-new)");
  }
  if (key == "serveraliveinterval") {
    auto n = parse_int(value, 0, 86400);
    if (!n) return make_error("bad seconds in '-o " + option + "'");
    heartbeat_s = static_cast<int>(*n);
    return {};
  }
  static const char* const ignored[] = {"loglevel",
                                        "batchmode",
                                        "connecttimeout",
                                        "userknownhostsfile",
                                        "passwordauthentication",
                                        "serveralivecountmax",
                                        "forwardx11",
                                        "forwardagent",
                                        "compression",
                                        "addressfamily"};
  for (const char* k : ignored)
    if (key == k) {
      notes.push_back("plm_rsh_args: '-o " + option + "' has no effect in ferry");
      return {};
    }
  return make_error("'-o " + option +
                    "' is not supported here; put it in ~/.ssh/config (or a file given "
                    "with --ssh-config)");
}

}  // namespace

Status apply_plm_rsh_args(const std::string& text, SshSettings& ssh, int& heartbeat_s,
                          std::vector<std::string>& notes) {
  auto words = shell_words(text);
  if (!words) return words.error();
  const std::vector<std::string>& w = *words;
  for (size_t i = 0; i < w.size(); ++i) {
    const std::string& word = w[i];
    if (word.size() < 2 || word[0] != '-')
      return make_error("unexpected '" + word + "' (expected ssh options such as -p 2222)");
    char opt = word[1];
    if (std::string("pilFo").find(opt) != std::string::npos) {
      std::string value = word.substr(2);
      if (value.empty()) {
        if (i + 1 >= w.size()) return make_error("'" + word + "' needs a value");
        value = w[++i];
      }
      Status st;
      switch (opt) {
        case 'p':
          st = set_port(value, ssh, word + " " + value);
          break;
        case 'l':
          st = set_user(value, ssh, word + " " + value);
          break;
        case 'i':
          ssh.identity_file = value;
          break;
        case 'F':
          ssh.config_file = value;
          break;
        case 'o':
          st = apply_o(value, ssh, heartbeat_s, notes);
          break;
      }
      if (!st) return st;
    } else if (word.size() == 2 && std::string("qxXTtCA46").find(opt) != std::string::npos) {
      notes.push_back("plm_rsh_args: '" + word + "' has no effect in ferry");
    } else {
      return make_error("ssh option '" + word +
                        "' is not supported here; put it in ~/.ssh/config (or a file given "
                        "with --ssh-config)");
    }
  }
  return {};
}

}  // namespace ferry
