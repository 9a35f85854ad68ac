#include "ferry/rendezvous/pmi_host.hpp"

#include <cstdlib>

namespace ferry {
namespace {

using Args = std::vector<std::pair<std::string, std::string>>;

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
  if (c.multi) {
    // mcmd=spawn: MPI_Comm_spawn needs a process manager that starts ranks on demand.
    return send(rank, refusal_name(c.cmd).empty() ? c.cmd + "_result" : refusal_name(c.cmd),
                {{"rc", "1"}, {"errmsg", "ferry_does_not_support_" + c.cmd}});
  }
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
