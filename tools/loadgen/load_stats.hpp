// Counters and latency samples of one load run, and the report printed from them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ds4::load {

// What the streaming clients saw. "Dropped" is the failure this tool exists to find: a request
// was written and the connection ended (or went silent past the request timeout) before a
// complete response arrived — no status line, or a stream without its [DONE]. 429 and 503 are
// answers, not drops: the daemon said why it refused.
struct ClientCounters {
  uint64_t sent = 0;       // requests written
  uint64_t completed = 0;  // 200 with a complete body ([DONE] for streams)
  uint64_t status_429 = 0;
  uint64_t status_503 = 0;
  uint64_t other_status = 0;  // any other status (each also listed in statuses)
  uint64_t dropped = 0;       // no response, or a truncated one
  uint64_t hung = 0;          // dropped because nothing completed within --request-timeout
  uint64_t connect_errors = 0;
  uint64_t connections = 0;  // TCP connections opened (fewer than requests: keep-alive)
  uint64_t tokens = 0;       // streamed token events
  std::map<unsigned, uint64_t> statuses;
  std::vector<double> ttft_ms;             // request written -> first token event
  std::vector<double> itl_ms;              // gap between consecutive token events of one stream
  std::vector<std::string> drop_examples;  // the first few, for the report

  void merge(const ClientCounters& o);
};

// The p-th percentile (0..100) of `v` by nearest rank; 0 for an empty vector. Sorts a copy.
double percentile(std::vector<double> v, double p);

struct RssSample {
  double t_s = 0;         // seconds since the run started
  uint64_t rss_kib = 0;   // VmRSS
  uint64_t anon_kib = 0;  // RssAnon
};

// Growth of `field` (VmRSS by default, &RssSample::anon_kib for anonymous memory) from the first
// sample at or after `warmup_s` to the last sample, in percent of the first; nullopt when fewer
// than two samples lie after warm-up.
std::optional<double> rss_growth_percent(const std::vector<RssSample>& samples, double warmup_s,
                                         uint64_t RssSample::*field = &RssSample::rss_kib);

// One external keep-alive client's summary (python http.client, node fetch, curl), read from
// the last line it printed: {"client":..,"completed":..,"dropped":..,"statuses":{..}}.
struct SideResult {
  std::string command;
  std::string client;
  int exit_status = -1;  // -1: killed after it overran its time
  uint64_t completed = 0, dropped = 0, requests = 0, connections = 0;
  std::map<unsigned, uint64_t> statuses;
  std::vector<std::string> drops;  // the client's first few drop reasons
  std::string error;               // why the summary could not be read, if it could not
};

}  // namespace ds4::load
