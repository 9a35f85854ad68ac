#include "ferry/rendezvous/pmi_host.hpp"

#include <charconv>
#include <cstdlib>
#include <optional>
#include <utility>

namespace ferry {
namespace {

using Args = std::vector<std::pair<std::string, std::string>>;

// The most commands, arguments and pairs one spawn block may carry (MPICH's own line limit
// keeps real ones far below).
constexpr int kSpawnItemsMax = 4096;

// The value of `key` in `c` as a number in [lo, hi], or nothing.
std::optional<int> number_arg(const PmiCommand& c, std::string_view key, int lo, int hi) {
  auto v = c.get(key);
  if (!v) return std::nullopt;
  int n = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || end != v->data() + v->size() || n < lo || n > hi) return std::nullopt;
  return n;
}

// Values of PMI replies cannot hold spaces: a reason goes with underscores.
std::string reply_text(std::string text) {
  for (char& ch : text)
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '=') ch = '_';
  return text;
}

// The reply each refused command expects (MPICH pmi_msg.h: PMIU_CMD_* response names), so
// the client reads a well-formed answer carrying rc != 0 instead of hanging.
std::string_view refusal_name(std::string_view cmd) {
  if (cmd == "spawn") return "spawn_result";
  if (cmd == "publish_name") return "publish_result";
  if (cmd == "unpublish_name") return "unpublish_result";
  if (cmd == "lookup_name") return "lookup_result";
  return {};
}

}  // namespace

PmiHost::PmiHost(PmiHostConfig config, PmiHostEvents events)
    : config_(std::move(config)), events_(std::move(events)) {
  for (int r : config_.ranks) ranks_.try_emplace(r);
  if (config_.universe_size <= 0) config_.universe_size = config_.world_size;
  commit(config_.preput);
}

bool PmiHost::initialized(int rank) const {
  auto it = ranks_.find(rank);
  return it != ranks_.end() && it->second.initialized;
}

bool PmiHost::finalized(int rank) const {
  auto it = ranks_.find(rank);
  return it != ranks_.end() && it->second.finalized;
}

void PmiHost::send(int rank, std::string_view cmd, const Args& args) {
  if (events_.reply) events_.reply(rank, format_pmi(cmd, args));
}

void PmiHost::fail(int rank, RankState& st, std::string why) {
  if (st.dead) return;
  st.dead = true;
  if (st.in_barrier) {
    st.in_barrier = false;
    --waiting_;
  }
  if (events_.failed) events_.failed(rank, std::move(why));
}

void PmiHost::feed(int rank, std::string_view bytes) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || it->second.dead) return;
  RankState& st = it->second;
  st.reader.feed(bytes);
  while (!st.dead) {
    auto c = st.reader.next();
    if (!c) return fail(rank, st, "PMI protocol error: " + c.error().message);
    if (!*c) break;
    handle(rank, st, **c);
  }
}

void PmiHost::closed(int rank) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || it->second.dead) return;
  RankState& st = it->second;
  if (st.initialized && !st.finalized)
    return fail(rank, st,
                "its PMI connection closed before PMI_Finalize (the rank died or "
                "exited inside MPI)");
  // Never used PMI (not an MPI program), or finalized: a normal end.
  st.dead = true;
}

int PmiHost::appnum_of(int rank) const {
  for (size_t i = 0; i < config_.ranks.size() && i < config_.appnums.size(); ++i)
    if (config_.ranks[i] == rank) return config_.appnums[i];
  return config_.appnum;
}

void PmiHost::handle(int rank, RankState& st, const PmiCommand& c) {
  if (st.in_barrier)
    return fail(rank, st, "PMI protocol error: cmd=" + c.cmd + " while waiting in a barrier");
  if (st.in_spawn)
    return fail(rank, st, "PMI protocol error: cmd=" + c.cmd + " while waiting for a spawn");
  if (c.multi && c.cmd == "spawn") {
    if (events_.spawn) return spawn_block(rank, st, c);
    return send(rank, "spawn_result", {{"rc", "1"}, {"errmsg", "spawn_is_not_served_here"}});
  }
  if (c.multi) {
    return send(rank, refusal_name(c.cmd).empty() ? c.cmd + "_result" : refusal_name(c.cmd),
                {{"rc", "1"}, {"errmsg", "ferry_does_not_support_" + c.cmd}});
  }
  if (st.spawn_total > 0)
    return fail(rank, st, "PMI protocol error: cmd=" + c.cmd + " inside a spawn's blocks");
  const std::string& cmd = c.cmd;
  if (cmd == "init") {
    st.initialized = true;
    // We speak version 1.1 whatever the client asked; MPICH checks only rc.
    return send(rank, "response_to_init",
                {{"rc", "0"}, {"pmi_version", "1"}, {"pmi_subversion", "1"}});
  }
  if (cmd == "get_maxes")
    return send(
        rank, "maxes",
        {{"rc", "0"}, {"kvsname_max", "256"}, {"keylen_max", "64"}, {"vallen_max", "1024"}});
  if (cmd == "get_appnum")
    return send(rank, "appnum", {{"rc", "0"}, {"appnum", std::to_string(appnum_of(rank))}});
  if (cmd == "get_my_kvsname")
    return send(rank, "my_kvsname", {{"rc", "0"}, {"kvsname", config_.kvsname}});
  if (cmd == "get_universe_size")
    return send(rank, "universe_size",
                {{"rc", "0"}, {"size", std::to_string(config_.universe_size)}});
  if (cmd == "put") return put(rank, st, c);
  if (cmd == "get") return get(rank, c);
  if (cmd == "barrier_in") return enter_barrier(st);
  if (cmd == "finalize") {
    st.finalized = true;
    return send(rank, "finalize_ack", {{"rc", "0"}});
  }
  if (cmd == "abort") return handle_abort(rank, st, c);
  auto refused = refusal_name(cmd);
  send(rank, refused.empty() ? cmd + "_result" : refused,
       {{"rc", "1"}, {"msg", "unsupported_command_" + cmd}});
}

// One `mcmd=spawn` block: a command of the spawn (simple_pmi.c's PMI_Spawn_multiple sends one
// per command, numbered by spawnssofar out of totspawns, each with the same preput pairs).
// The last one sends the whole request on; the reply waits for spawn_done().
void PmiHost::spawn_block(int rank, RankState& st, const PmiCommand& c) {
  auto bad = [&](const std::string& what) {
    fail(rank, st, "PMI protocol error: a spawn block with " + what);
  };
  const auto total = number_arg(c, "totspawns", 1, kSpawnItemsMax);
  const auto sofar = number_arg(c, "spawnssofar", 1, kSpawnItemsMax);
  if (!total || !sofar) return bad("no valid totspawns or spawnssofar");
  if (st.spawn_total == 0) {
    st.spawn = {};
    st.spawn_total = *total;
  }
  if (*total != st.spawn_total || *sofar != static_cast<int>(st.spawn.commands.size()) + 1)
    return bad("spawnssofar=" + std::to_string(*sofar) + " of totspawns=" + std::to_string(*total) +
               " out of order");
  PmiSpawnCommand cmd;
  const auto nprocs = number_arg(c, "nprocs", 1, 65536);
  auto execname = c.get("execname");
  if (!nprocs) return bad("no valid nprocs");
  if (!execname || execname->empty()) return bad("no execname");
  cmd.nprocs = *nprocs;
  cmd.execname = *execname;
  const auto argcnt = number_arg(c, "argcnt", 0, kSpawnItemsMax);
  if (!argcnt) return bad("no valid argcnt");
  for (int i = 1; i <= *argcnt; ++i) {
    auto a = c.get("arg" + std::to_string(i));
    if (!a) return bad("argcnt=" + std::to_string(*argcnt) + " but no arg" + std::to_string(i));
    cmd.args.emplace_back(*a);
  }
  // preput_key_0.. and info_key_0.. (0-based, unlike the arguments).
  auto pairs = [&](const std::string& what, std::vector<PmiKv>& out) {
    const auto n = number_arg(c, what + "_num", 0, kSpawnItemsMax);
    if (!n) return false;
    for (int i = 0; i < *n; ++i) {
      auto k = c.get(what + "_key_" + std::to_string(i));
      auto v = c.get(what + "_val_" + std::to_string(i));
      if (!k || !v) return false;
      out.push_back({std::string(*k), std::string(*v)});
    }
    return true;
  };
  std::vector<PmiKv> preput;
  if (!pairs("preput", preput)) return bad("a missing preput pair");
  if (!pairs("info", cmd.info)) return bad("a missing info pair");
  if (st.spawn.commands.empty()) st.spawn.preput = std::move(preput);
  st.spawn.commands.push_back(std::move(cmd));
  if (*sofar < st.spawn_total) return;  // more blocks to come, no reply yet
  st.spawn_total = 0;
  st.in_spawn = true;
  events_.spawn(rank, std::exchange(st.spawn, {}));
}

void PmiHost::spawn_done(int rank, const std::string& why) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || !it->second.in_spawn) return;
  it->second.in_spawn = false;
  if (it->second.dead) return;
  if (why.empty()) return send(rank, "spawn_result", {{"rc", "0"}});
  send(rank, "spawn_result", {{"rc", "1"}, {"errmsg", reply_text(why)}});
}

void PmiHost::put(int rank, RankState& st, const PmiCommand& c) {
  auto key = c.get("key");
  auto value = c.get("value");
  if (!key || key->empty() || !value)
    return send(rank, "put_result", {{"rc", "1"}, {"msg", "missing_key_or_value"}});
  auto idx = pending_index_.find(*key);
  const std::size_t before = idx == pending_index_.end() ? 0 : pending_[idx->second].value.size();
  const std::size_t added = idx == pending_index_.end() ? key->size() : 0;
  if (bytes_ + added + value->size() - before > config_.store_limit)
    return fail(rank, st, store_full_message("PMI key-value space"));
  bytes_ = bytes_ + added + value->size() - before;
  if (idx == pending_index_.end()) {
    pending_index_.emplace(std::string(*key), pending_.size());
    pending_.push_back({std::string(*key), std::string(*value)});
  } else {
    pending_[idx->second].value = std::string(*value);
  }
  return send(rank, "put_result", {{"rc", "0"}});
}

void PmiHost::get(int rank, const PmiCommand& c) {
  auto key = c.get("key");
  if (!key) return send(rank, "get_result", {{"rc", "1"}, {"msg", "missing_key"}});
  if (*key == "PMI_process_mapping" && !config_.process_mapping.empty())
    return send(rank, "get_result", {{"rc", "0"}, {"value", config_.process_mapping}});
  // This host's own puts are visible before the barrier, as with hydra; other hosts'
  // only after it (PMI promises nothing earlier).
  if (auto p = pending_index_.find(*key); p != pending_index_.end())
    return send(rank, "get_result", {{"rc", "0"}, {"value", pending_[p->second].value}});
  if (auto v = kvs_.find(*key); v != kvs_.end())
    return send(rank, "get_result", {{"rc", "0"}, {"value", v->second}});
  return send(rank, "get_result",
              {{"rc", "1"}, {"msg", "key_" + std::string(*key) + "_not_found"}});
}

// The last rank of this host in the barrier sends the host's puts on (barrier_ready).
void PmiHost::enter_barrier(RankState& st) {
  st.in_barrier = true;
  if (++waiting_ == static_cast<int>(ranks_.size())) {
    ++sent_epoch_;
    std::vector<PmiKv> puts = std::move(pending_);
    pending_.clear();
    pending_index_.clear();
    // Keep them visible locally while the barrier is out.
    commit(puts);
    if (events_.barrier_ready) events_.barrier_ready(sent_epoch_, std::move(puts));
  }
}

void PmiHost::handle_abort(int rank, RankState& st, const PmiCommand& c) {
  int code = 1;
  if (auto v = c.get("exitcode")) code = std::atoi(std::string(*v).c_str());
  std::string msg;
  if (auto m = c.get("message"))
    msg = *m;
  else if (auto m2 = c.get("msg"))
    msg = *m2;
  st.dead = true;  // no reply: the job is being aborted
  if (events_.abort) events_.abort(rank, code, std::move(msg));
}

// Stores pairs in kvs_ and counts the bytes held again. Every host's puts arrive here: the
// bound is checked at the next put.
void PmiHost::commit(const std::vector<PmiKv>& kvs) {
  for (const auto& kv : kvs) kvs_[kv.key] = kv.value;
  bytes_ = 0;
  for (const auto& [k, v] : kvs_) bytes_ += k.size() + v.size();
  for (const auto& kv : pending_) bytes_ += kv.key.size() + kv.value.size();
}

Status PmiHost::barrier_complete(uint32_t epoch, const std::vector<PmiKv>& kvs) {
  if (epoch != sent_epoch_ || epoch == done_epoch_)
    return make_error("PMI barrier " + std::to_string(epoch) + " completed, but barrier " +
                      std::to_string(sent_epoch_) + " is the one pending");
  commit(kvs);
  done_epoch_ = epoch;
  waiting_ = 0;
  for (auto& [rank, st] : ranks_) {
    if (!st.in_barrier) continue;
    st.in_barrier = false;
    if (!st.dead) send(rank, "barrier_out", {{"rc", "0"}});
  }
  return {};
}

}  // namespace ferry
