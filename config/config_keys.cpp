// The configuration key table; see config_keys.hpp. Adding a key is adding one line here (and
// documenting it in ds4d.example.toml, which a test checks).
#include "config/config_keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <stdexcept>
#include <vector>

#include "config/drafter_spec.hpp"
#include "engine/planner/byte_size.hpp"
#include "engine/planner/max_batch.hpp"

namespace ds4::config {
namespace {

using Set = std::function<void(Config&, const std::string&)>;
using Get = std::function<std::string(const Config&)>;

uint64_t parse_uint(const std::string& s, uint64_t max) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    throw std::invalid_argument("expected a non-negative integer, got '" + s + "'");
  uint64_t v = 0;
  try {
    v = std::stoull(s);
  } catch (const std::out_of_range&) {
    throw std::invalid_argument("'" + s + "' is out of range");
  }
  if (v > max) throw std::invalid_argument(fmt::format("'{}' exceeds the maximum {}", s, max));
  return v;
}

long long parse_int(const std::string& s, long long lo, long long hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("expected an integer, got '" + s + "'");
  }
  if (used != s.size()) throw std::invalid_argument("expected an integer, got '" + s + "'");
  if (v < lo || v > hi) throw std::invalid_argument(fmt::format("{} is outside [{}, {}]", v, lo, hi));
  return v;
}

double parse_double(const std::string& s, double lo, double hi) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("expected a number, got '" + s + "'");
  }
  if (used != s.size()) throw std::invalid_argument("expected a number, got '" + s + "'");
  if (!(v >= lo && v <= hi)) throw std::invalid_argument(fmt::format("{} is outside [{}, {}]", s, lo, hi));
  return v;
}

bool parse_bool(const std::string& s) {
  std::string l;
  for (char c : s) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "true" || l == "1" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "0" || l == "no" || l == "off") return false;
  throw std::invalid_argument("expected true or false, got '" + s + "'");
}

std::string choice(const std::string& s, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed)
    if (s == a) return s;
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  throw std::invalid_argument("'" + s + "' is not one of " + list);
}

std::string fmt_double(double v) { return fmt::format("{}", v); }

struct Builder {
  std::vector<ConfigKey> keys;
  void add(std::string path, std::string type, std::string help, Set set, Get get, KeyScope scope = KeyScope::Both,
           std::string alias = {}) {
    ConfigKey k;
    k.path = path;
    std::string flag = "--", env = "DS4D_";
    for (char c : path) {
      flag += (c == '.' || c == '_') ? '-' : c;
      env += (c == '.') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    k.flag = flag;
    k.env = env;
    k.alias = std::move(alias);
    k.type = std::move(type);
    k.help = std::move(help);
    k.scope = scope;
    k.set = std::move(set);
    k.get = std::move(get);
    keys.push_back(std::move(k));
  }
};

#define STR(field) [](Config& c, const std::string& v) { c.field = v; }, [](const Config& c) { return c.field; }
#define BYTES(field) \
  [](Config& c, const std::string& v) { c.field = planner::parse_byte_size(v); }, \
      [](const Config& c) { return std::to_string(c.field); }
#define UINT(field, max) \
  [](Config& c, const std::string& v) { c.field = static_cast<decltype(c.field)>(parse_uint(v, max)); }, \
      [](const Config& c) { return std::to_string(c.field); }
// A byte size or token count that may be `auto` (unset: the planner sizes it).
#define AUTO_BYTES(field) \
  [](Config& c, const std::string& v) { \
    if (v == "auto") c.field.reset(); \
    else c.field = planner::parse_byte_size(v); \
  }, \
      [](const Config& c) { return c.field ? std::to_string(*c.field) : std::string("auto"); }
#define AUTO_UINT(field, max) \
  [](Config& c, const std::string& v) { \
    if (v == "auto") c.field.reset(); \
    else c.field = parse_uint(v, max); \
  }, \
      [](const Config& c) { return c.field ? std::to_string(*c.field) : std::string("auto"); }
#define BOOL(field) \
  [](Config& c, const std::string& v) { c.field = parse_bool(v); }, \
      [](const Config& c) { return std::string(c.field ? "true" : "false"); }

std::vector<ConfigKey> build() {
  constexpr uint64_t u32max = std::numeric_limits<uint32_t>::max();
  Builder b;
  // [model]
  b.add("model.path", "path", "target model GGUF", STR(model.path), KeyScope::Both, "--model");
  b.add("model.context", "tokens|auto",
        "context length in tokens (auto: sized from the model and MemTotal; 0: the model's trained context_length)",
        AUTO_UINT(model.context, uint64_t{1} << 40), KeyScope::Both, "--context");
  b.add("model.prefill_cap", "tokens", "prefill batch the memory plan assumes (it sizes the GPU raw KV ring)",
        UINT(model.prefill_cap, 65536));
  b.add(
      "model.pin", "none|lock|cuda",
      "keep the weights resident: none (page cache only), lock (MAP_POPULATE + mlock; needs "
      "LimitMEMLOCK=infinity), cuda (CUDA host registration of the mapping through the driver, libcuda.so.1)",
      [](Config& c, const std::string& v) {
        const std::string s = choice(v, {"none", "lock", "cuda"});
        c.model.pin = s == "none" ? PinMode::None : s == "lock" ? PinMode::Lock : PinMode::Cuda;
      },
      [](const Config& c) { return std::string(pin_mode_name(c.model.pin)); }, KeyScope::Both, "--pin");
  b.add("model.threads", "count", "engine CPU threads (0: all cores)", UINT(model.threads, 4096), KeyScope::Daemon);
  // [engine]
  b.add(
      "engine.backend", "auto|cpu|cuda",
      "which device runs the forward: auto (CUDA when a usable GPU and the device forward exist, else the CPU "
      "with one log line), cpu, or cuda (a startup error until the forward runs on the GPU; docs/cuda.md)",
      [](Config& c, const std::string& v) {
        c.engine.backend = cuda::parse_backend(choice(v, {"auto", "cpu", "cuda"}));
      },
      [](const Config& c) { return std::string(cuda::backend_name(c.engine.backend)); }, KeyScope::Daemon, "--backend");
  b.add(
      "engine.upstreams", "URL,...",
      "gateway mode: upstream engines, comma list (the flag repeats): http://HOST:PORT for a ds4d, "
      "vllm+http://HOST:PORT or sglang+http://HOST:PORT for vLLM or SGLang (docs/scale-out.md); empty: run the model "
      "here",
      [](Config& c, const std::string& v) { c.engine.upstreams = v; },
      [](const Config& c) { return c.engine.upstreams; }, KeyScope::Daemon, "--upstream");
  b.keys.back().repeatable = true;
  b.add("engine.tokenizer", "path", "gateway mode: a GGUF with the upstreams' tokenizer (checked against them)",
        STR(engine.tokenizer), KeyScope::Daemon, "--tokenizer");
  b.add(
      "engine.routing", "hash|round_robin", "gateway mode: how jobs pick an upstream (round_robin: a baseline)",
      [](Config& c, const std::string& v) {
        c.engine.routing = choice(v, {"hash", "round_robin"});
      },
      [](const Config& c) { return c.engine.routing; }, KeyScope::Daemon);
  b.add("engine.upstream_wait_s", "seconds", "gateway mode: how long the start waits for an upstream to answer",
        UINT(engine.upstream_wait_s, 86400), KeyScope::Daemon);
  // [server]
  b.add("server.host", "address", "HTTP bind address", STR(server.host), KeyScope::Daemon, "--host");
  b.add("server.port", "port", "HTTP port", UINT(server.port, 65535), KeyScope::Daemon, "--port");
  b.add("server.max_queue", "count", "requests waiting for the engine before new ones get 429",
        UINT(server.max_queue, 1 << 20), KeyScope::Daemon);
  // Both: the supervisor's plan counts the live contexts too (and forwards the flag).
  b.add(
      "server.max_batch", "count|auto",
      "sessions the engine decodes together, each holding its own KV in the memory plan (auto: the most, up to 8, "
      "that the plan fits)",
      [](Config& c, const std::string& v) {
        if (v == "auto") {
          c.server.max_batch.reset();
          return;
        }
        uint64_t n = 0;
        try {
          n = parse_uint(v, planner::kMaxBatchLimit);
        } catch (const std::invalid_argument&) {
          n = 0;
        }
        if (n == 0)
          throw std::invalid_argument(
              fmt::format("expected a count 1..{} or auto, got '{}'", planner::kMaxBatchLimit, v));
        c.server.max_batch = static_cast<uint32_t>(n);
      },
      [](const Config& c) { return c.server.max_batch ? std::to_string(*c.server.max_batch) : std::string("auto"); },
      KeyScope::Both, "--max-batch");
  b.add("server.drain_timeout_s", "seconds", "on SIGTERM, how long in-flight requests may finish",
        UINT(server.drain_timeout_s, 86400), KeyScope::Daemon);
  b.add("server.api_key_file", "path", "file holding the bearer API key (empty: no authentication)",
        STR(server.api_key_file), KeyScope::Daemon);
  b.add("server.engine_stall_s", "seconds",
        "an engine call (prefill chunk, decode step) running longer than this counts as stuck and stops "
        "the WATCHDOG=1 pings",
        UINT(server.engine_stall_s, 86400), KeyScope::Daemon);
  b.add("server.cors_origins", "list",
        "comma-separated browser origins (scheme://host[:port], or *) that may call the API; requests with "
        "any other Origin get 403 (empty: none)",
        STR(server.cors_origins), KeyScope::Daemon);
  b.add("server.allowed_hosts", "list",
        "comma-separated Host names accepted besides loopback names and the bind address (*: any); checked "
        "when no API key is set or when this is given (DNS rebinding)",
        STR(server.allowed_hosts), KeyScope::Daemon);
  b.add("server.allow_unauthenticated_remote", "bool",
        "allow a non-loopback server.host without server.api_key_file (refused otherwise)",
        BOOL(server.allow_unauthenticated_remote), KeyScope::Daemon);
  b.add("server.max_connections", "count", "open HTTP connections at most (idle keep-alive ones are closed first)",
        UINT(server.max_connections, 1 << 20), KeyScope::Daemon);
  b.add("server.max_inflight_body_bytes", "bytes",
        "request body bytes held by all requests together; a request beyond it gets 503",
        BYTES(server.max_inflight_body_bytes), KeyScope::Daemon);
  b.add(
      "server.contracts", "off|warn|strict",
      "echo contracts (reasoning and tool-call replay): off (no checks), warn (repair what can be repaired and "
      "report it), strict (422 naming the broken contract)",
      [](Config& c, const std::string& v) {
        c.server.contracts = choice(v, {"off", "warn", "strict"});
      },
      [](const Config& c) { return c.server.contracts; }, KeyScope::Daemon);
  b.add("server.io_threads", "count", "HTTP connection I/O threads", UINT(server.io_threads, 256), KeyScope::Daemon);
  b.add("server.handler_threads", "count",
        "threads that parse, render and tokenize POST bodies off the I/O threads (so /health stays fast)",
        UINT(server.handler_threads, 256), KeyScope::Daemon);
  b.add("server.max_header_bytes", "bytes", "largest request head (larger: 431)", BYTES(server.max_header_bytes),
        KeyScope::Daemon);
  b.add("server.max_body_bytes", "bytes", "largest request body (larger: 413)", BYTES(server.max_body_bytes),
        KeyScope::Daemon);
  b.add("server.max_tokenize_response_bytes", "bytes", "largest /tokenize answer (longer: 413)",
        BYTES(server.max_tokenize_response_bytes), KeyScope::Daemon);
  b.add("server.read_timeout_s", "seconds", "time to read one request once it started",
        UINT(server.read_timeout_s, 86400), KeyScope::Daemon);
  b.add("server.idle_timeout_s", "seconds", "keep-alive wait for a connection's next request",
        UINT(server.idle_timeout_s, 86400), KeyScope::Daemon);
  b.add("server.write_timeout_s", "seconds", "one write to a client that does not read",
        UINT(server.write_timeout_s, 86400), KeyScope::Daemon);
  b.add("server.request_timeout_s", "seconds",
        "one generation, time in the queue included (then it ends with finish reason 'length')",
        UINT(server.request_timeout_s, 30 * 86400), KeyScope::Daemon);
  b.add("server.model_name", "name", "model name clients see in /v1/models and responses (empty: the model's id)",
        STR(server.model_name), KeyScope::Daemon);
  b.add("server.model_aliases", "list",
        "comma-separated other names a request's model may give (exact, or a prefix ending in '*'; '*': any "
        "name); others get 404 model_not_found. Exact aliases are listed in /v1/models",
        STR(server.model_aliases), KeyScope::Daemon);
  // [memory]
  b.add("memory.floor", "bytes|auto",
        "minimum MemAvailable (and planned headroom) for admitting new work (auto: 4 GiB scaled to MemTotal)",
        AUTO_BYTES(memory.floor));
  b.add("memory.reserve", "bytes|auto",
        "memory the plan sets aside for the OS and other processes (auto: 4 GiB scaled to MemTotal)",
        AUTO_BYTES(memory.reserve));
  b.add(
      "memory.workspace", "bytes", "activation/CUDA workspace for the plan (unset: estimated from the model)",
      [](Config& c, const std::string& v) {
        if (v.empty()) c.memory.workspace.reset();
        else c.memory.workspace = planner::parse_byte_size(v);
      },
      [](const Config& c) { return c.memory.workspace ? std::to_string(*c.memory.workspace) : std::string(); });
  b.add(
      "memory.psi_full_avg10_limit", "percent", "refuse new work while PSI memory 'full' avg10 is above this",
      [](Config& c, const std::string& v) { c.memory.psi_full_avg10_limit = parse_double(v, 0, 100); },
      [](const Config& c) { return fmt_double(c.memory.psi_full_avg10_limit); }, KeyScope::Daemon);
  b.add("memory.poll_ms", "milliseconds", "memory watch period", UINT(memory.poll_ms, 60000), KeyScope::Daemon);
  b.add("memory.meminfo_path", "path", "meminfo file (tests point it elsewhere)", STR(memory.meminfo_path));
  b.add("memory.psi_path", "path", "PSI memory file (empty: do not watch PSI)", STR(memory.psi_path), KeyScope::Daemon);
  b.add("memory.swap_size", "bytes|auto",
        "supervisor: ensure at least this much swap (0: leave swap alone; auto: 16 GiB scaled to MemTotal)",
        AUTO_BYTES(memory.swap_size), KeyScope::Supervisor);
  b.add("memory.swap_file", "path", "supervisor: swap file to create when swap is short", STR(memory.swap_file),
        KeyScope::Supervisor);
  b.add(
      "memory.oom_score_adj", "-1000..1000", "supervisor: the daemon's oom_score_adj",
      [](Config& c, const std::string& v) { c.memory.oom_score_adj = static_cast<int>(parse_int(v, -1000, 1000)); },
      [](const Config& c) { return std::to_string(c.memory.oom_score_adj); }, KeyScope::Supervisor);
  b.add("memory.earlyoom", "bool", "supervisor: write the earlyoom drop-in when earlyoom is installed",
        BOOL(memory.earlyoom), KeyScope::Supervisor);
  b.add(
      "memory.earlyoom_term_percent", "percent", "earlyoom SIGTERM level, % of MemTotal (unset: floor/2)",
      [](Config& c, const std::string& v) {
        if (v.empty()) c.memory.earlyoom_term_percent.reset();
        else c.memory.earlyoom_term_percent = parse_double(v, 0, 100);
      },
      [](const Config& c) {
        return c.memory.earlyoom_term_percent ? fmt_double(*c.memory.earlyoom_term_percent) : std::string();
      },
      KeyScope::Supervisor);
  b.add(
      "memory.earlyoom_kill_percent", "percent", "earlyoom SIGKILL level, % of MemTotal (unset: floor/4)",
      [](Config& c, const std::string& v) {
        if (v.empty()) c.memory.earlyoom_kill_percent.reset();
        else c.memory.earlyoom_kill_percent = parse_double(v, 0, 100);
      },
      [](const Config& c) {
        return c.memory.earlyoom_kill_percent ? fmt_double(*c.memory.earlyoom_kill_percent) : std::string();
      },
      KeyScope::Supervisor);
  b.add("memory.earlyoom_dropin", "path", "supervisor: where the earlyoom drop-in is written",
        STR(memory.earlyoom_dropin), KeyScope::Supervisor);
  // [cache]
  b.add("cache.hot_bytes", "bytes|auto",
        "warm sessions (conversation snapshots) kept in RAM; counted in the memory plan (auto: up to 12 GiB of "
        "what the plan leaves)",
        AUTO_BYTES(cache.hot_bytes), KeyScope::Both, "--hot-cache");
  b.add("cache.dir", "path", "directory for disk KV checkpoints, mode 0700 (empty: none)", STR(cache.dir),
        KeyScope::Daemon);
  b.add("cache.disk_bytes", "bytes", "disk budget for KV checkpoints; the least valuable go first (0: none)",
        BYTES(cache.disk_bytes), KeyScope::Daemon);
  b.add("cache.checkpoint_min_tokens", "tokens", "prompts shorter than this get no warm session or checkpoint",
        UINT(cache.checkpoint_min_tokens, u32max), KeyScope::Daemon);
  b.add("cache.checkpoint_interval_tokens", "tokens", "long prefills write a disk checkpoint this often (0: never)",
        UINT(cache.checkpoint_interval_tokens, u32max), KeyScope::Daemon);
  // [speculation]
  b.add(
      "speculation.drafter", "none|ngram|mtp:FILE",
      "exact speculative decoding: none, ngram (prompt lookup) or mtp:FILE (an MTP sidecar GGUF)",
      [](Config& c, const std::string& v) { c.speculation.drafter = drafter_name(parse_drafter(v)); },
      [](const Config& c) { return c.speculation.drafter; }, KeyScope::Both, "--drafter");
  b.add("speculation.k", "tokens", "drafts verified per decode step (0: no speculation)",
        UINT(speculation.k, kMaxSpeculationK), KeyScope::Daemon);
  b.add("speculation.sidecar_bytes", "bytes", "plan size of the drafter (0: its file size)",
        BYTES(speculation.sidecar_bytes));
  // [log]
  b.add(
      "log.level", "level", "trace, debug, info, warn, error, critical or off",
      [](Config& c, const std::string& v) {
        c.log.level = choice(v, {"trace", "debug", "info", "warn", "error", "critical", "off"});
      },
      [](const Config& c) { return c.log.level; });
  b.add(
      "log.format", "auto|journal|console",
      "journal: '<N>' syslog priority prefixes, no timestamps or colours; auto: journal when JOURNAL_STREAM is set",
      [](Config& c, const std::string& v) {
        c.log.format = choice(v, {"auto", "journal", "console"});
      },
      [](const Config& c) { return c.log.format; });
  // [supervisor]
  b.add("supervisor.user", "user", "service user the daemon runs as (when the supervisor is root)",
        STR(supervisor.user), KeyScope::Supervisor);
  b.add("supervisor.daemon", "path", "the ds4d executable", STR(supervisor.daemon), KeyScope::Supervisor);
  b.add("supervisor.restart_delay_s", "seconds", "delay before the first restart after a crash (doubles)",
        UINT(supervisor.restart_delay_s, 3600), KeyScope::Supervisor);
  b.add("supervisor.restart_max_delay_s", "seconds", "longest restart delay",
        UINT(supervisor.restart_max_delay_s, 86400), KeyScope::Supervisor);
  b.add("supervisor.max_restarts", "count", "crashes within restart_window_s before the supervisor gives up",
        UINT(supervisor.max_restarts, 1000), KeyScope::Supervisor);
  b.add("supervisor.restart_window_s", "seconds", "window for max_restarts", UINT(supervisor.restart_window_s, u32max),
        KeyScope::Supervisor);
  b.add("supervisor.stop_timeout_s", "seconds", "SIGKILL the daemon this long after forwarding SIGTERM",
        UINT(supervisor.stop_timeout_s, 86400), KeyScope::Supervisor);
  return b.keys;
}

#undef STR
#undef BYTES
#undef UINT
#undef BOOL
#undef AUTO_BYTES
#undef AUTO_UINT

}  // namespace

const char* pin_mode_name(PinMode m) {
  switch (m) {
    case PinMode::None: return "none";
    case PinMode::Lock: return "lock";
    case PinMode::Cuda: return "cuda";
  }
  return "?";
}

std::span<const ConfigKey> config_keys() {
  static const std::vector<ConfigKey> keys = build();
  return keys;
}

const ConfigKey* find_config_key(const std::string& path) {
  for (const ConfigKey& k : config_keys())
    if (k.path == path) return &k;
  return nullptr;
}

}  // namespace ds4::config
