// What MPI's dynamic processes ask of ferryd's PMIx server: the job's name service
// (MPI_Publish_name, MPI_Lookup_name, MPI_Unpublish_name, and the exchange Open MPI's
// MPI_Comm_accept/MPI_Comm_connect make through it) and collectives over some processes
// (PMIx_Connect, PMIx_Disconnect, fences over listed processes). The front end keeps the names
// (NameDirectory) and gathers the collectives' hosts (GroupOps); libpmix calls these on its
// own thread, and each does its work on the server's loop.

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "pmix_state.hpp"

// libpmix's values are C unions (pmix_value_t): every upcall here reads or fills them.
// NOLINTBEGIN(cppcoreguidelines-pro-type-union-access)
namespace ferry::pmix_detail {
namespace {

using State = PmixServer::State;

// PMIx reserves keys beginning with "pmix" for its attributes: the directives libpmix and
// Open MPI add to a publish or lookup (range, persistence, user and group, wait, timeout).
bool is_attribute(const char* key) { return std::strncmp(key, "pmix", 4) == 0; }

// An integer-valued attribute, whatever integer type the client gave it.
long integer_of(const pmix_value_t& v) {
  switch (v.type) {
    case PMIX_BOOL:
      return v.data.flag ? 1 : 0;
    case PMIX_PERSIST:
      return v.data.persist;
    case PMIX_DATA_RANGE:
      return v.data.range;
    case PMIX_INT:
      return v.data.integer;
    case PMIX_UINT:
      return static_cast<long>(v.data.uint);
    case PMIX_INT32:
      return v.data.int32;
    case PMIX_UINT32:
      return static_cast<long>(v.data.uint32);
    case PMIX_UINT8:
      return v.data.uint8;
    case PMIX_INT8:
      return v.data.int8;
    case PMIX_UINT16:
      return v.data.uint16;
    case PMIX_INT16:
      return v.data.int16;
    default:
      return 0;
  }
}

wire::PmixProcName name_of(const pmix_proc_t& p) {
  return {std::string(p.nspace, ::strnlen(p.nspace, PMIX_MAX_NSLEN)), p.rank};
}

std::string bytes(const char* data, size_t n) { return data && n ? std::string(data, n) : ""; }

std::vector<std::string> keys_of(char** keys) {
  std::vector<std::string> out;
  for (char** k = keys; k && *k; ++k) out.emplace_back(*k);
  return out;
}

// A request to the front end's name service, answered in names_answer().
uint32_t remember(State& s, State::NameWait w) {
  const uint32_t id = s.next_request++;
  s.names[id] = std::move(w);
  return id;
}

// ---- libpmix's upcalls ------------------------------------------------------------------

// The names are the info entries that are not PMIx attributes; string and byte-object values
// are kept (MPI's names are strings; Open MPI's accept/connect exchange publishes both).
pmix_status_t publish(const pmix_proc_t* proc, const pmix_info_t info[], size_t ninfo,
                      pmix_op_cbfunc_t cbfunc, void* cbdata) {
  wire::PmixPublish m;
  m.owner = name_of(*proc);
  for (size_t i = 0; i < ninfo; ++i) {
    if (is_attribute(info[i].key)) {
      if (std::strcmp(info[i].key, PMIX_PERSISTENCE) == 0)
        m.first_read = integer_of(info[i].value) == PMIX_PERSIST_FIRST_READ;
      continue;
    }
    const pmix_value_t& v = info[i].value;
    if (v.type == PMIX_STRING)
      m.names.push_back({info[i].key, v.data.string ? v.data.string : "", {}, false});
    else if (v.type == PMIX_BYTE_OBJECT)
      m.names.push_back({info[i].key, bytes(v.data.bo.bytes, v.data.bo.size), {}, true});
    else
      return PMIX_ERR_NOT_SUPPORTED;
  }
  if (m.names.empty()) return PMIX_ERR_BAD_PARAM;
  return on_loop([m = std::move(m), cbfunc, cbdata](State& s) mutable {
    m.id = remember(s, {cbfunc, nullptr, cbdata, nullptr});
    s.events.send(wire::encode(m));
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

// PMIX_WAIT: answered once every key is published; PMIX_TIMEOUT (seconds) bounds that wait
// here, and the front end is told to forget the lookup.
pmix_status_t lookup(const pmix_proc_t*, char** keys, const pmix_info_t info[], size_t ninfo,
                     pmix_lookup_cbfunc_t cbfunc, void* cbdata) {
  wire::PmixLookup m;
  m.keys = keys_of(keys);
  long timeout_s = 0;
  for (size_t i = 0; i < ninfo; ++i) {
    if (std::strcmp(info[i].key, PMIX_WAIT) == 0)
      m.wait = info[i].value.type != PMIX_BOOL || info[i].value.data.flag;
    else if (std::strcmp(info[i].key, PMIX_TIMEOUT) == 0)
      timeout_s = integer_of(info[i].value);
  }
  if (m.keys.empty()) return PMIX_ERR_BAD_PARAM;
  return on_loop([m = std::move(m), cbfunc, cbdata, timeout_s](State& s) mutable {
    State::NameWait w{nullptr, cbfunc, cbdata, nullptr};
    m.id = remember(s, w);
    if (m.wait && timeout_s > 0) {
      auto timer = std::make_shared<asio::steady_timer>(s.io, std::chrono::seconds(timeout_s));
      s.names[m.id].timer = timer;
      timer->async_wait([weak = s.self, id = m.id](const std::error_code& ec) {
        auto st = weak.lock();
        if (ec || !st || st->closed) return;
        auto it = st->names.find(id);
        if (it == st->names.end()) return;
        auto cb = it->second;
        st->names.erase(it);
        wire::PmixLookup cancel;
        cancel.id = id;
        cancel.cancel = true;
        st->events.send(wire::encode(cancel));
        cb.lookup(PMIX_ERR_TIMEOUT, nullptr, 0, cb.cbdata);
      });
    }
    s.events.send(wire::encode(m));
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

pmix_status_t unpublish(const pmix_proc_t* proc, char** keys, const pmix_info_t[], size_t,
                        pmix_op_cbfunc_t cbfunc, void* cbdata) {
  wire::PmixUnpublish m;
  m.owner = name_of(*proc);
  m.keys = keys_of(keys);
  return on_loop([m = std::move(m), cbfunc, cbdata](State& s) mutable {
    m.id = remember(s, {cbfunc, nullptr, cbdata, nullptr});
    s.events.send(wire::encode(m));
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

// Connect (kind 1) and disconnect (kind 2): a collective of the hosts of `procs`.
template <uint8_t Kind>
pmix_status_t group_op(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t[], size_t,
                       pmix_op_cbfunc_t cbfunc, void* cbdata) {
  auto listed = proc_names(procs, nprocs);
  return on_loop([listed = std::move(listed), cbfunc, cbdata](State& s) {
    start_group(s, Kind, listed, {}, {cbfunc, nullptr, cbdata});
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

}  // namespace

// The MPI_Info keys naming hosts (Open MPI passes them as these attributes) in `info`.
void add_host_keys(const pmix_info_t info[], size_t ninfo, std::vector<std::string>& out) {
  static const std::pair<const char*, const char*> kHostKeys[] = {
      {PMIX_HOST, "host"},
      {PMIX_HOSTFILE, "hostfile"},
      {PMIX_ADD_HOST, "add-host"},
      {PMIX_ADD_HOSTFILE, "add-hostfile"}};
  for (size_t k = 0; info && k < ninfo; ++k)
    for (const auto& [attr, name] : kHostKeys)
      if (std::strcmp(info[k].key, attr) == 0) out.emplace_back(name);
}

// MPI_Comm_spawn: the front end places the children on the job's free slots and starts them;
// its answer names their namespace. Keys that name hosts go along to be refused (placing the
// children elsewhere would quietly not do what was asked); the mapping keys are not read:
// children go where mpirun would put them without them.
pmix_status_t spawn(const pmix_proc_t* proc, const pmix_info_t job_info[], size_t ninfo,
                    const pmix_app_t apps[], size_t napps, pmix_spawn_cbfunc_t cbfunc,
                    void* cbdata) {
  wire::PmixSpawn m;
  m.parent = name_of(*proc);
  add_host_keys(job_info, ninfo, m.host_keys);
  for (size_t i = 0; i < napps; ++i) {
    const pmix_app_t& a = apps[i];
    if (a.maxprocs <= 0 || !a.cmd) return PMIX_ERR_BAD_PARAM;
    wire::PmixSpawnApp app;
    app.cmd = a.cmd;
    app.argv = keys_of(a.argv);
    if (app.argv.empty()) app.argv.push_back(app.cmd);
    app.env = keys_of(a.env);
    app.cwd = a.cwd ? a.cwd : "";
    // Open MPI passes the directory it wants as the app's PMIX_WDIR.
    for (size_t k = 0; k < a.ninfo; ++k)
      if (std::strcmp(a.info[k].key, PMIX_WDIR) == 0 && a.info[k].value.type == PMIX_STRING &&
          a.info[k].value.data.string && app.cwd.empty())
        app.cwd = a.info[k].value.data.string;
    app.maxprocs = static_cast<uint32_t>(a.maxprocs);
    add_host_keys(a.info, a.ninfo, m.host_keys);
    m.apps.push_back(std::move(app));
  }
  if (m.apps.empty()) return PMIX_ERR_BAD_PARAM;
  return on_loop([m = std::move(m), cbfunc, cbdata](State& s) mutable {
    m.id = s.next_request++;
    s.spawns[m.id] = {cbfunc, cbdata};
    s.events.send(wire::encode(m));
  })
             ? PMIX_SUCCESS
             : PMIX_ERROR;
}

void answer_spawn(const State::SpawnWait& w, pmix_status_t status, const std::string& nspace) {
  pmix_nspace_t name;
  std::memset(name, 0, sizeof name);
  std::strncpy(name, nspace.c_str(), PMIX_MAX_NSLEN);
  if (w.cbfunc) w.cbfunc(status, name, w.cbdata);
}

void answer_group(const State::GroupWait& w, pmix_status_t status, const std::string& data) {
  if (w.fence) return answer(State::Waiting{w.fence, w.cbdata}, status, data);
  if (w.op) w.op(status, w.cbdata);
}

void answer_names(const State::NameWait& w, pmix_status_t status,
                  const std::vector<wire::PmixName>& names) {
  if (w.timer) w.timer->cancel();
  if (w.op) return w.op(status, w.cbdata);
  if (!w.lookup) return;
  // libpmix packs the answer before the callback returns: the strings may live here.
  std::vector<pmix_pdata_t> data(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    std::memset(&data[i], 0, sizeof data[i]);
    fill_proc(data[i].proc, names[i].owner.nspace, static_cast<int>(names[i].owner.rank));
    std::strncpy(data[i].key, names[i].key.c_str(), PMIX_MAX_KEYLEN);
    if (names[i].bytes) {
      data[i].value.type = PMIX_BYTE_OBJECT;
      data[i].value.data.bo.bytes = const_cast<char*>(names[i].value.data());
      data[i].value.data.bo.size = names[i].value.size();
    } else {
      data[i].value.type = PMIX_STRING;
      data[i].value.data.string = const_cast<char*>(names[i].value.c_str());
    }
  }
  w.lookup(status, data.empty() ? nullptr : data.data(), data.size(), w.cbdata);
}

std::vector<wire::PmixProcName> proc_names(const pmix_proc_t procs[], size_t nprocs) {
  std::vector<wire::PmixProcName> out;
  out.reserve(nprocs);
  for (size_t i = 0; i < nprocs; ++i) out.push_back(name_of(procs[i]));
  return out;
}

void start_group(State& s, uint8_t kind, const std::vector<wire::PmixProcName>& procs,
                 const std::string& data, State::GroupWait w) {
  const uint32_t id = s.next_request++;
  s.groups[id] = w;
  s.events.send(wire::encode(wire::PmixGroupOp{id, kind, procs, data}));
}

void fail_dynamic(State& s, pmix_status_t status) {
  auto names = std::move(s.names);
  auto groups = std::move(s.groups);
  auto spawns = std::move(s.spawns);
  s.names.clear();
  s.groups.clear();
  s.spawns.clear();
  for (auto& [id, w] : names) answer_names(w, status, {});
  for (auto& [id, w] : groups) answer_group(w, status, {});
  for (auto& [id, w] : spawns) answer_spawn(w, status, {});
}

void add_dynamic_upcalls(pmix_server_module_t& m) {
  m.publish = publish;
  m.lookup = lookup;
  m.unpublish = unpublish;
  m.connect = group_op<1>;
  m.disconnect = group_op<2>;
  m.spawn = spawn;
}

}  // namespace ferry::pmix_detail
// NOLINTEND(cppcoreguidelines-pro-type-union-access)

namespace ferry {
namespace {

// The request numbered `id` that `waiting` holds, taken out of it; nullopt when none is.
template <class Map>
std::optional<typename Map::mapped_type> take(Map& waiting, uint32_t id) {
  auto it = waiting.find(id);
  if (it == waiting.end()) return std::nullopt;
  auto w = std::move(it->second);
  waiting.erase(it);
  return w;
}

}  // namespace

// An answer for a request this server no longer waits for (a lookup that timed out here, a
// request of an earlier attempt) is dropped: numbers are never reused.
void PmixServer::names_answer(const wire::PmixNames& m) {
  if (auto w = take(state_->names, m.id)) pmix_detail::answer_names(*w, m.status, m.names);
}

void PmixServer::spawn_done(const wire::PmixSpawnDone& m) {
  if (auto w = take(state_->spawns, m.id)) pmix_detail::answer_spawn(*w, m.status, m.nspace);
}

void PmixServer::group_done(const wire::PmixGroupDone& m) {
  if (auto w = take(state_->groups, m.id)) pmix_detail::answer_group(*w, m.status, m.data);
}

}  // namespace ferry
