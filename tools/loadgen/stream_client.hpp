// One simulated agent client: a keep-alive connection that posts streaming chat requests in a
// loop until the run's deadline, timing each token event.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <random>
#include <string>

#include "tools/loadgen/load_stats.hpp"

namespace ds4::load {

struct ClientPlan {
  boost::asio::ip::tcp::endpoint endpoint;  // loopback only (checked by the caller)
  std::string host_header;                  // "127.0.0.1:PORT"
  std::string target = "/v1/chat/completions";
  std::string body;  // the JSON request
  bool stream = true;
  std::chrono::steady_clock::time_point deadline;  // no new request starts after it
  std::chrono::milliseconds request_timeout{120'000};
  std::chrono::milliseconds refusal_backoff{250};  // pause after a 429/503 (jittered ±50 %)
};

// Runs requests until plan.deadline; every outcome goes into `out`. Never throws: network
// errors are counted. Who owns what: `plan` and `out` must outlive the coroutine.
boost::asio::awaitable<void> run_stream_client(const ClientPlan& plan, ClientCounters& out, unsigned seed);

}  // namespace ds4::load
