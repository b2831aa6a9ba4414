#pragma once
// ds4d configuration: one struct, shared by the daemon and the root supervisor, filled from (in
// rising precedence) built-in defaults, the TOML file, DS4D_* environment variables and command
// line flags. Every key is described once, in a table (config_keys.cpp) that the loader, --help,
// --print-config and the documentation test all read. Unknown sections or keys in the file are
// errors with file, line and column. The memory budgets and server.max_batch default to `auto`
// (an empty optional), sized by the capacity planner. Details:
// config/README.md §configuration-logging-exit-statuses-config, docs/api.md §configuration.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/cuda/backend_choice.hpp"

namespace ds4::config {

enum class PinMode { None, Lock, Cuda };
const char* pin_mode_name(PinMode m);

struct Config {
  struct Model {
    std::string path = "/usr/share/ds4d/models/ds4-tiny-agent.gguf";  // the packaged default model
    std::optional<uint64_t>
        context;  // tokens; unset = auto (planner/auto_budget.hpp); 0 = the model's trained context_length
    uint32_t prefill_cap = 2048;  // prefill ubatch the memory plan assumes
    PinMode pin = PinMode::Lock;
    uint32_t threads = 0;  // engine CPU threads; 0 = all cores
  } model;
  struct Engine {
    cuda::Backend backend = cuda::Backend::Automatic;  // auto | cpu | cuda (engine/cuda/backend_choice.hpp)
    // Gateway mode (docs/scale-out.md): comma list of upstream ds4d engines (http://HOST:PORT);
    // empty: the model runs here.
    std::string upstreams;
    std::string tokenizer;           // gateway mode: a GGUF whose tokenizer the upstreams use
    std::string routing = "hash";    // hash (route key, consistent) | round_robin (a baseline)
    uint32_t upstream_wait_s = 120;  // at start, how long to wait for an upstream to answer
  } engine;
  struct Server {
    std::string host = "127.0.0.1";
    uint16_t port = 8080;
    uint32_t max_queue = 16;                          // pending requests before 503
    std::optional<uint32_t> max_batch;                // sessions decoded together; unset = auto (the plan's)
    uint32_t drain_timeout_s = 60;                    // SIGTERM: wait this long for in-flight requests
    std::string api_key_file;                         // empty: no authentication
    uint32_t engine_stall_s = 300;                    // an engine call running longer stops the WATCHDOG=1 pings
    std::string cors_origins;                         // comma list of browser origins allowed ("*": any); empty: none
    std::string allowed_hosts;                        // comma list of Host names besides loopback ones ("*": any)
    bool allow_unauthenticated_remote = false;        // permit a non-loopback host without api_key_file
    uint32_t max_connections = 512;                   // open connections (idle ones are shed first)
    uint64_t max_inflight_body_bytes = 128ull << 20;  // request bodies held at once (503 beyond)
    std::string contracts = "warn";                   // echo contracts: off | warn | strict
    // The rest of the HTTP server's settings (gateway/transport/server.hpp ServerConfig), with its
    // defaults; daemon/http_server_config.cpp maps them and a test keeps the defaults equal.
    uint32_t io_threads = 2;                             // connection I/O threads
    uint32_t handler_threads = 2;                        // threads parsing and rendering POST bodies
    uint64_t max_header_bytes = 64ull << 10;             // larger request head: 431
    uint64_t max_body_bytes = 64ull << 20;               // larger request body: 413
    uint64_t max_tokenize_response_bytes = 16ull << 20;  // a longer /tokenize answer: 413
    uint32_t read_timeout_s = 30;                        // reading one request once it started
    uint32_t idle_timeout_s = 60;                        // keep-alive wait for the next request
    uint32_t write_timeout_s = 30;                       // one write to a client that does not read
    uint32_t request_timeout_s = 1800;                   // one generation, time in the queue included
    std::string model_name;                              // name clients see; empty: the model's id
    std::string model_aliases = "*";                     // comma list of other accepted names; 'x*': prefix
  } server;
  struct Memory {
    std::optional<uint64_t> floor;       // minimum MemAvailable to admit new work; unset = auto
    std::optional<uint64_t> reserve;     // OS + other processes, for the plan; unset = auto
    std::optional<uint64_t> workspace;   // unset: planner estimate
    double psi_full_avg10_limit = 20.0;  // refuse new work above this PSI full avg10 (%)
    uint32_t poll_ms = 1000;             // memory watch period
    std::string meminfo_path = "/proc/meminfo";
    std::string psi_path = "/proc/pressure/memory";
    std::optional<uint64_t>
        swap_size;  // supervisor: ensure at least this much swap; 0 = leave swap alone; unset = auto
    std::string swap_file = "/var/lib/ds4d/swapfile";
    int oom_score_adj = -900;                     // supervisor: the daemon's oom_score_adj
    bool earlyoom = true;                         // supervisor: write the earlyoom drop-in
    std::optional<double> earlyoom_term_percent;  // unset: derived from the floor
    std::optional<double> earlyoom_kill_percent;
    std::string earlyoom_dropin = "/etc/systemd/system/earlyoom.service.d/50-ds4d.conf";
  } memory;
  struct Cache {
    std::optional<uint64_t> hot_bytes;            // warm sessions (snapshots) in RAM; unset = auto
    std::string dir = "/var/lib/ds4d/kv";         // disk KV checkpoints; empty = none
    uint64_t disk_bytes = 32ull << 30;            // disk budget for them; 0 = none
    uint32_t checkpoint_min_tokens = 256;         // shorter prompts get no restore point
    uint32_t checkpoint_interval_tokens = 16384;  // long prefills write a checkpoint this often
  } cache;
  struct Speculation {
    std::string drafter = "none";  // none | ngram | mtp:FILE (drafter_spec.hpp)
    uint32_t k = 4;                // drafts verified per step (0: no speculation)
    uint64_t sidecar_bytes = 0;    // plan override for the drafter's size; 0 = file size
  } speculation;
  struct Log {
    std::string level = "info";   // trace debug info warn error critical off
    std::string format = "auto";  // auto (journal when JOURNAL_STREAM is set) | journal | console
  } log;
  struct Supervisor {
    std::string user = "ds4d";
    std::string daemon = "/usr/sbin/ds4d";
    uint32_t restart_delay_s = 1;  // first restart delay; doubles per crash
    uint32_t restart_max_delay_s = 60;
    uint32_t max_restarts = 5;  // crashes within restart_window_s before giving up
    uint32_t restart_window_s = 600;
    uint32_t stop_timeout_s = 90;  // SIGKILL the daemon this long after forwarding SIGTERM
  } supervisor;
};

}  // namespace ds4::config
