#include "pmix_service.hpp"

#include <algorithm>
#include <cstdlib>

#include "ferry/rendezvous/pmix_job.hpp"

namespace ferry {
namespace {

// PMIX_ERR_NOT_FOUND, for a request that reaches a host without PMIx.
constexpr int32_t kNotFound = -46;

}  // namespace

PmixService::PmixService(asio::io_context& io, Guard& guard,
                         std::function<void(const std::string&)> send,
                         std::function<void(const std::string&)> log,
                         std::function<void*()> topology)
    : io_(io),
      guard_(guard),
      send_(std::move(send)),
      log_(std::move(log)),
      topology_(std::move(topology)) {}

void PmixService::start_early(const std::string& node) {
  if (!tried_) start_server(node);
}

void PmixService::start_server(const std::string& node) {
  tried_ = true;
  node_ = node;
  const char* tmp = std::getenv("TMPDIR");
  PmixServer::Events events;
  events.send = [this](const std::string& frame) { send_(frame); };
  events.started = [this](const std::string& version) {
    if (verbose_) log_(node_ + ": PMIx server " + version + " (started when a rank connected)");
  };
  events.failed = [this](const std::string& why) {
    log_(node_ + ": Open MPI ranks get no PMIx: " + why);
  };
  auto s = PmixServer::start(io_, node, tmp && *tmp ? tmp : "/tmp", topology_(), std::move(events));
  if (!s) {
    start_why_ = s.error().message;
    return;
  }
  server_ = std::move(*s);
  guard_.remove_at_exit(server_->directory());
}

PmixServer* PmixService::begin(const wire::HostSpec& spec,
                               const std::vector<std::string>& cpusets) {
  on_ = false;
  if (!spec.pmi || spec.node_names.empty()) return nullptr;
  auto ns = make_pmix_namespace(pmix_nspace_name(spec.job_id, spec.attempt), spec.node_of_rank,
                                spec.node_names, spec.node_index);
  if (!ns) {
    log_(ns.error().message);
    return nullptr;
  }
  node_names_ = spec.node_names;
  node_index_ = spec.node_index;
  universe_size_ = static_cast<uint32_t>(std::max(spec.universe_size, 0));
  ns->universe_size = universe_size_;
  if (Status st = set_pmix_apps(*ns, spec.app_sizes); !st) {
    log_(st.error().message);
    return nullptr;
  }
  if (cpusets.size() == ns->local_ranks.size())
    for (const auto& c : cpusets) ns->local_cpusets += (ns->local_cpusets.empty() ? "" : ":") + c;
  const std::string& node = ns->nodes[ns->node];
  if (!tried_) start_server(node);
  verbose_ = spec.verbose;
  if (!said_ && spec.verbose && !server_)
    log_(node + ": Open MPI ranks get no PMIx: " + start_why_);
  said_ = true;
  if (!server_) return nullptr;
  if (node != node_)  // only when hosts with one hostname leave or join between attempts
    log_(node + ": the PMIx server runs as " + node_ +
         "; Open MPI ranks may see the wrong peers on their host");
  if (auto st = server_->begin(*ns); !st) {
    log_(node + ": " + st.error().message);
    return nullptr;
  }
  on_ = true;
  return server_.get();
}

Status PmixService::fence_done(const wire::PmixFenceDone& m) {
  if (!on_) return make_error("a PMIx fence answer arrived, but PMIx is off");
  return server_->fence_done(m);
}

void PmixService::modex_request(const wire::PmixModexRequest& m) {
  if (!on_) return send_(wire::encode(wire::PmixModexReply{m.id, kNotFound, {}}));
  server_->modex_request(m);
}

Status PmixService::modex_reply(const wire::PmixModexReply& m) {
  if (!on_) return make_error("a PMIx data answer arrived, but PMIx is off");
  return server_->modex_reply(m);
}

void PmixService::names_answer(const wire::PmixNames& m) {
  if (on_) server_->names_answer(m);
}

void PmixService::group_done(const wire::PmixGroupDone& m) {
  if (on_) server_->group_done(m);
}

void PmixService::spawn_done(const wire::PmixSpawnDone& m) {
  if (on_) server_->spawn_done(m);
}

Status PmixService::spawn_job(const wire::PmixSpawnJob& m) {
  if (!on_) return make_error("processes were spawned, but this host's ranks have no PMIx");
  auto ns = make_spawned_namespace(m.nspace, m.node_of_rank, node_names_, node_index_);
  if (!ns) return ns.error();
  ns->universe_size = universe_size_;  // the children's universe is the job's
  if (Status st = set_pmix_apps(*ns, m.app_sizes); !st) return st;
  return server_->add_namespace(*ns);
}

std::string PmixService::exit_failure(int rank, const wire::Exited& e) const {
  // A non-zero status fails the rank already, and says more.
  if (!on_ || e.signal != 0 || e.exit_code != 0 || !server_->unfinalized(rank)) return "";
  return "it exited (status 0) after MPI_Init without calling MPI_Finalize";
}

}  // namespace ferry
