// The TOML job file: one table per concern, each key the twin of a command-line option
// (docs/job-file.md has the table of both).

#include "ferry/cli/job_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "cli_text.hpp"
#include "ferry/cli/binding_flags.hpp"
#include "ferry/cli/rank_list.hpp"
#include "ferry/common/read_text_file.hpp"
#include "ferry/common/text.hpp"
#include "ferry/hosts/host_fields.hpp"
#include "ferry/transport/ferryd_shipment.hpp"
#include "toml_guard.hpp"
#include "toml_reader.hpp"

namespace ferry {
namespace {

using cli_detail::TomlReader;

constexpr std::size_t job_file_size_limit = 16u << 20;

// The folder of `file` with a trailing '/', or "" for a bare name.
std::string folder_of(const std::string& file) {
  auto slash = file.rfind('/');
  return slash == std::string::npos ? "" : file.substr(0, slash + 1);
}

bool is_var_name(std::string_view n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string env_value(const toml::node& n) {
  if (auto s = n.value_exact<std::string>()) return *s;
  if (auto i = n.value_exact<int64_t>()) return std::to_string(*i);
  if (auto b = n.value_exact<bool>()) return *b ? "1" : "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", *n.value_exact<double>());
  return buf;
}

void read_environment(TomlReader& r, const toml::table& env, JobFile& out) {
  // toml++ keeps keys sorted; the file's order reads better in --verbose and messages.
  std::vector<std::pair<uint32_t, std::string>> by_line;
  for (auto&& [key, node] : env) {
    if (r.error()) return;
    std::string name(key.str());
    if (!is_var_name(name)) {
      r.fail(key.source(), "[environment] '" + name +
                               "' is not a variable name (letters, "
                               "digits, '_')");
      return;
    }
    bool scalar =
        node.is_string() || node.is_integer() || node.is_floating_point() || node.is_boolean();
    if (!scalar) {
      r.fail(node.source(), "[environment] " + name + " must be a string, number or boolean, not " +
                                cli_detail::type_name(node));
      return;
    }
    std::string value = env_value(node);
    if (value.find('\0') != std::string::npos) {
      r.fail(node.source(), "[environment] " + name + " contains a NUL character");
      return;
    }
    by_line.emplace_back(key.source().begin.line, name + "=" + value);
  }
  std::stable_sort(by_line.begin(), by_line.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [line, kv] : by_line) out.exports.push_back(std::move(kv));
}

void read_defaults(TomlReader& r, const toml::table& d, JobFile& out) {
  FrontendConfig& cfg = out.config;
  r.check_keys(d, "[defaults]",
               {"slots", "port", "user", "ferryd", "ship_ferryd", "ferryd_dir", "devices"});
  r.get(d, "slots", out.default_slots, 1, 1'000'000);
  r.get(d, "port", cfg.ssh.port, 1, 65535);
  std::string user;
  r.get(d, "user", user);
  if (!user.empty()) {
    HostFields check;
    check.name = "x";
    check.user = user;
    if (auto h = host_from_fields(check, 1, ""); !h)
      r.fail(d.get("user")->source(), "[defaults] " + h.error().message);
    else
      cfg.ssh.user = user;
  }
  std::string ferryd;
  r.get(d, "ferryd", ferryd);
  if (!ferryd.empty()) {
    if (!is_safe_ferryd_path(ferryd))
      r.fail(d.get("ferryd")->source(),
             "[defaults] bad ferryd '" + ferryd +
                 "' (a path of letters, digits, '/', '.', '-', '_', '+')");
    else
      cfg.job.ferryd_path = ferryd;
  }
  std::string ship;
  r.get(d, "ship_ferryd", ship);
  if (!ship.empty()) {
    if (auto mode = parse_ship_mode(ship); !mode)
      r.fail(d.get("ship_ferryd")->source(), "[defaults] ship_ferryd " + mode.error().message);
    else
      cfg.ship_ferryd = ship;
  }
  r.get(d, "ferryd_dir", cfg.ferryd_dir);
  r.get(d, "devices", cfg.job.binding.devices, 0, 1'000'000);
}

void read_host_table(TomlReader& r, const toml::table& t, JobFile& out, HostList& hosts) {
  r.check_keys(t, "[[hosts]]", {"name", "slots", "max_slots", "port", "user", "ferryd", "devices"});
  if (r.error()) return;
  if (!t.get("name")) {
    r.fail(t.source(), "a [[hosts]] entry needs a name");
    return;
  }
  HostFields f;
  long long slots = 0, max_slots = 0;
  r.get(t, "name", f.name);
  r.get(t, "user", f.user);
  r.get(t, "ferryd", f.ferryd);
  r.get(t, "port", f.port, 1, 65535);
  r.get(t, "slots", slots, 1, 1'000'000);
  r.get(t, "max_slots", max_slots, 1, 1'000'000);
  std::vector<int> devices;
  r.get(t, "devices", devices, 0, 1'000'000);
  if (r.error()) return;
  if (t.get("slots")) f.slots = slots;
  if (t.get("max_slots")) f.max_slots = max_slots;
  auto host = host_from_fields(f, out.default_slots, r.where(t.source()));
  if (!host) {
    r.fail(t.source(), "[[hosts]] " + host.error().message);
    return;
  }
  if (t.get("devices")) {
    // A host named twice (its slots add up) has one device list: the entries must agree.
    auto& all = out.config.job.host_devices;
    auto same = std::find_if(all.begin(), all.end(), [&](const HostDevices& d) {
      return d.name == host->name && d.user == host->user && d.port == host->port;
    });
    if (same != all.end() && same->devices != devices) {
      r.fail(t.get("devices")->source(),
             "[[hosts]] " + host->name + ": devices differ from an earlier entry of this host");
      return;
    }
    if (same == all.end()) all.push_back({host->name, host->user, host->port, devices});
  }
  hosts.push_back(std::move(*host));
}

void read_hosts(TomlReader& r, const toml::node& node, JobFile& out) {
  const toml::array* list = node.as_array();
  if (!list) {
    r.fail(node.source(),
           "hosts must be an array of \"host:slots\" strings or [[hosts]] "
           "tables, not " +
               std::string(cli_detail::type_name(node)));
    return;
  }
  HostList hosts;
  for (const toml::node& el : *list) {
    if (r.error()) return;
    if (const toml::table* t = el.as_table()) {
      read_host_table(r, *t, out, hosts);
    } else if (auto s = el.value_exact<std::string>()) {
      auto parsed = parse_host_option(*s, out.default_slots);
      if (!parsed) {
        std::string m = parsed.error().message;
        if (m.starts_with("-H: ")) m = m.substr(4);
        r.fail(el.source(), "hosts: " + m);
        return;
      }
      for (auto& h : *parsed) h.origin = r.where(el.source());
      hosts.insert(hosts.end(), parsed->begin(), parsed->end());
    } else {
      r.fail(el.source(), "hosts: expected a \"host:slots\" string or a table, found " +
                              std::string(cli_detail::type_name(el)));
      return;
    }
  }
  merge_hosts(out.config.job.hosts, hosts);
}

// "~/x" → "$HOME/x", as a shell would have done for the same path on the command line.
std::string expand_home(const std::string& path) {
  const char* home = std::getenv("HOME");
  if (path.starts_with("~/") && home && *home) return home + path.substr(1);
  return path;
}

void read_ssh(TomlReader& r, const toml::table& s, FrontendConfig& cfg) {
  r.check_keys(s, "[ssh]", {"identity_file", "config_file", "accept_new", "heartbeat"});
  r.get(s, "identity_file", cfg.ssh.identity_file);
  r.get(s, "config_file", cfg.ssh.config_file);
  cfg.ssh.identity_file = expand_home(cfg.ssh.identity_file);
  cfg.ssh.config_file = expand_home(cfg.ssh.config_file);
  r.get(s, "accept_new", cfg.ssh.accept_new);
  r.get(s, "heartbeat", cfg.job.heartbeat_s, 0, 86400);
}

// Applies one binding word through the command-line parser, naming the key on error.
template <typename F>
void apply_word(TomlReader& r, const toml::table& b, const char* key, F apply) {
  std::string text;
  r.get(b, key, text);
  if (r.error() || text.empty()) return;
  Status st = apply(text);
  if (!st)
    r.fail(b.get(key)->source(), std::string("[binding] ") + key + ": " + st.error().message);
}

void read_binding(TomlReader& r, const toml::table& b, JobOptions& job) {
  r.check_keys(b, "[binding]",
               {"bind_to", "map_by", "rank_by", "ranks_per_node", "cpus_per_rank", "bind_mem",
                "devices_per_rank", "isolate_devices", "report_bindings"});
  // map_by first: it may pick a default unit that an explicit bind_to then overrides.
  apply_word(r, b, "map_by", [&job](const std::string& t) { return apply_map_by(t, job); });
  apply_word(r, b, "bind_to",
             [&job](const std::string& t) { return apply_bind_to(t, job.binding); });
  apply_word(r, b, "rank_by",
             [&job](const std::string& t) { return apply_rank_by(t, job.placement); });
  r.get(b, "ranks_per_node", job.placement.per_host, 1, 1'000'000);
  r.get(b, "cpus_per_rank", job.binding.cpus_per_rank, 0, 1'000'000);
  r.get(b, "bind_mem", job.binding.bind_mem);
  r.get(b, "devices_per_rank", job.binding.devices_per_rank, 0, 1'000'000);
  r.get(b, "isolate_devices", job.binding.isolate_devices);
  r.get(b, "report_bindings", job.binding.report_bindings);
}

// [output]'s console keys: console_ranks, fold, summary.
void read_console(TomlReader& r, const toml::table& o, FrontendConfig& cfg) {
  std::string ranks, summary;
  r.get(o, "console_ranks", ranks);
  r.get(o, "fold", cfg.output.fold);
  r.get(o, "summary", summary);
  if (r.error()) return;
  if (!ranks.empty()) {
    auto list = parse_rank_list(ranks);
    if (!list)
      return r.fail(o.get("console_ranks")->source(),
                    "[output] console_ranks: " + list.error().message);
    cfg.output.console_ranks = std::move(*list);
  }
  if (summary == "hosts")
    cfg.job.summary = JobOptions::Summary::kHosts;
  else if (summary == "ranks")
    cfg.job.summary = JobOptions::Summary::kRanks;
  else if (!summary.empty())
    r.fail(o.get("summary")->source(),
           "[output] bad summary '" + summary + "' (expected hosts or ranks)");
}

void read_output(TomlReader& r, const toml::table& o, OutputOptions& out) {
  r.check_keys(
      o, "[output]",
      {"tag", "timestamps", "merge_stderr", "dir", "layout", "console_ranks", "fold", "summary"});
  std::string tag, layout;
  r.get(o, "tag", tag);
  r.get(o, "layout", layout);
  r.get(o, "timestamps", out.timestamps);
  r.get(o, "merge_stderr", out.merge_stderr);
  r.get(o, "dir", out.output_dir);
  if (r.error()) return;
  if (tag == "horovod")
    out.tag = TagStyle::kHorovod;
  else if (tag == "openmpi")
    out.tag = TagStyle::kOpenMpi;
  else if (tag == "mpich")
    out.tag = TagStyle::kMpich;
  else if (tag == "none")
    out.tag = TagStyle::kNone;
  else if (tag == "host")
    out.tag = TagStyle::kHost;
  else if (!tag.empty())
    r.fail(o.get("tag")->source(),
           "[output] bad tag '" + tag + "' (expected horovod, host, openmpi, mpich or none)");
  if (layout == "horovod")
    out.layout = FileLayout::kHorovod;
  else if (layout == "openmpi")
    out.layout = FileLayout::kOpenMpi;
  else if (!layout.empty())
    r.fail(o.get("layout")->source(),
           "[output] bad layout '" + layout + "' (expected horovod or openmpi)");
}

// [[apps]]: an MPMD job's parts, in order, each `command` (an array of words) with its own
// `np`, `hosts` ("a:2,b" or an array of them), `per_host`, `export`, `environment` and
// `wdir`.
void read_apps(TomlReader& r, const toml::node& node, JobFile& out) {
  const toml::array* list = node.as_array();
  if (!list || !list->is_array_of_tables()) {
    r.fail(node.source(),
           "apps must be [[apps]] tables (command, np, hosts, export, environment, wdir)");
    return;
  }
  for (const toml::node& el : *list) {
    if (r.error()) return;
    const toml::table& t = *el.as_table();
    r.check_keys(t, "[[apps]]",
                 {"command", "np", "hosts", "per_host", "export", "environment", "wdir"});
    AppPart part;
    part.where = r.where(el.source()) + " [[apps]]";
    r.get(t, "command", part.command, false);
    if (!r.error() && part.command.empty())
      r.fail(el.source(), "[[apps]] needs a command (an array of words)");
    r.get(t, "np", part.np, 1, 1'000'000);
    r.get(t, "per_host", part.per_host, 1, 1'000'000);
    r.get(t, "hosts", part.hosts, true);
    r.get(t, "export", part.exports, false);
    if (const toml::table* e = r.table(t, "environment"))
      for (const auto& [k, v] : *e) {
        auto value = v.value<std::string>();
        if (!value) {
          r.fail(v.source(), "[[apps]] environment: " + std::string(k.str()) + " must be a string");
          return;
        }
        part.exports.push_back(std::string(k.str()) + "=" + *value);
      }
    r.get(t, "wdir", part.wdir);
    if (r.error()) return;
    out.apps.push_back(std::move(part));
  }
}

void read_top(TomlReader& r, const toml::table& top, JobFile& out, const std::string& file) {
  JobOptions& job = out.config.job;
  r.check_keys(
      top, "the top level",
      {"np",          "command", "wdir",     "oversubscribe", "start_timeout", "kill_grace",
       "stdin",       "verbose", "timeout",  "stall_timeout", "stall_abort",   "hostfile",
       "hosts",       "export",  "env_file", "env_all",       "defaults",      "ssh",
       "environment", "binding", "output",   "apps"});
  r.get(top, "np", job.np, 1, 1'000'000);
  if (const toml::node* c = top.get("command"); c && c->is_string() && !r.error())
    r.fail(c->source(),
           "command must be an array of words such as [\"python3\", "
           "\"train.py\"] (no shell splitting)");
  r.get(top, "command", job.command, false);
  if (!r.error() && top.get("command") && job.command.empty())
    r.fail(top.get("command")->source(), "command must not be empty");
  r.get(top, "wdir", job.wdir);
  r.get(top, "oversubscribe", job.oversubscribe);
  r.get(top, "start_timeout", job.start_timeout_s, 1, 86400);
  r.get(top, "kill_grace", job.kill_grace_s, 0, 3600);
  r.get(top, "timeout", job.timeout_s, 1, 31'536'000);
  r.get(top, "stall_timeout", job.stall_timeout_s, 1, 31'536'000);
  r.get(top, "stall_abort", job.stall_abort);
  std::string nic;
  r.get(top, "network_interface", nic);
  if (!nic.empty()) job.network_interfaces = {nic};
  r.get(top, "verbose", job.verbose);
  if (const toml::node* s = top.get("stdin"); s && !r.error()) {
    if (auto rank = s->value_exact<int64_t>(); rank && *rank >= 0 && *rank < 1'000'000)
      job.stdin_rank = static_cast<int>(*rank);
    else if (s->value_exact<std::string>() == std::optional<std::string>("none"))
      job.stdin_rank = -1;
    else
      r.fail(s->source(),
             "stdin must be a rank number or \"none\" (ferry gives stdin to one "
             "rank at most)");
  }
  std::vector<std::string> hostfiles;
  r.get(top, "hostfile", hostfiles, true);
  for (auto& h : hostfiles) out.hostfiles.push_back(h.front() == '/' ? h : folder_of(file) + h);
  std::vector<std::string> env_files;
  r.get(top, "env_file", env_files, true);
  for (auto& e : env_files) out.env_files.push_back(e.front() == '/' ? e : folder_of(file) + e);
  r.get(top, "env_all", out.env_all);
  std::vector<std::string> exports;
  r.get(top, "export", exports, false);
  if (const toml::array* a = top.get("export") ? top.get("export")->as_array() : nullptr)
    for (size_t i = 0; i < a->size() && i < exports.size() && !r.error(); ++i)
      if (!is_var_name(exports[i].substr(0, exports[i].find('='))) &&
          (exports[i].find('=') != std::string::npos ||
           exports[i].find_first_of("*?[") == std::string::npos))
        r.fail((*a)[i].source(),
               "export: '" + exports[i] + "' is not VAR, VAR=value or a pattern such as NCCL_*");

  if (const toml::node* a = top.get("apps"); a && !r.error()) {
    read_apps(r, *a, out);
    if (!r.error() && top.get("command"))
      r.fail(top.get("command")->source(),
             "command and [[apps]] both name the programs: give one (each part its command)");
  }
  if (const toml::table* d = r.table(top, "defaults")) read_defaults(r, *d, out);
  if (const toml::node* h = top.get("hosts"); h && !r.error()) read_hosts(r, *h, out);
  if (const toml::table* s = r.table(top, "ssh")) read_ssh(r, *s, out.config);
  if (const toml::table* e = r.table(top, "environment")) read_environment(r, *e, out);
  out.exports.insert(out.exports.end(), exports.begin(), exports.end());
  if (const toml::table* b = r.table(top, "binding")) read_binding(r, *b, job);
  if (const toml::table* o = r.table(top, "output")) {
    read_output(r, *o, out.config.output);
    read_console(r, *o, out.config);
  }
}

}  // namespace

Result<JobFile> parse_job_file_text(const std::string& text_in, const std::string& file,
                                    const FrontendConfig& base) {
  JobFile out;
  out.config = base;
  // Editors on Windows start UTF-8 files with a byte-order mark; TOML is UTF-8 anyway.
  static constexpr std::string_view kBom = "\xEF\xBB\xBF";
  const std::string text = text_in.starts_with(kBom) ? text_in.substr(kBom.size()) : text_in;
  if (auto bad = cli_detail::non_ascii_outside_strings(text)) {
    std::string at = file + ":" + std::to_string(bad->where.line) + ": ";
    std::string column = " (column " + std::to_string(bad->where.column) + ")";
    if (bad->after_backslash)
      return make_error(at +
                        "non-ASCII character right after a line-ending backslash in a "
                        "multi-line string, which this toml++ cannot read; put it on the "
                        "same line" +
                        column);
    return make_error(at + "non-ASCII character outside a string or comment" + column);
  }
  try {
    toml::table top = toml::parse(text, file);
    TomlReader r(file);
    read_top(r, top, out, file);
    if (r.error()) return *r.error();
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    return make_error(file + ":" + std::to_string(at.line) + ": not valid TOML: " +
                      std::string(e.description()) + " (column " + std::to_string(at.column) + ")");
  } catch (const std::exception& e) {
    return make_error(file + ": cannot read: " + e.what());
  }
  return out;
}

Result<JobFile> read_job_file(const std::string& path, const FrontendConfig& base) {
  std::string ext =
      lower(path.substr(path.rfind('.') == std::string::npos ? path.size() : path.rfind('.')));
  if (ext == ".yaml" || ext == ".yml")
    return make_error(path +
                      ": YAML job files are not supported; write it as a TOML job file "
                      "(see docs/job-file.md and examples/job.toml)");
  auto text = read_text_file(path, job_file_size_limit, "job file");
  if (!text) return text.error();
  return parse_job_file_text(*text, path, base);
}

}  // namespace ferry
