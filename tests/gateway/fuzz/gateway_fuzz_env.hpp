#pragma once
// The set-up the gateway's request fuzzers share: one Service on the scripted engine whose
// admission gate refuses all work (so every dispatch answers synchronously and nothing runs on
// another thread), routed twice — without a key and with key "k3y" — and the invariants every
// reply must hold. A broken invariant aborts, which libFuzzer reports as a finding.
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gateway/api/endpoints.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "gateway/transport/router.hpp"
#include "tests/gateway/scripted_backend.hpp"

namespace ds4::fuzz {

inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

struct GatewayFuzzEnv {
  ds4::serving::Metrics metrics;
  ds4::serving::Service service{{}, metrics};
  ds4::http::ServerConfig open_config;
  ds4::http::ServerConfig keyed_config;
  ds4::http::Router open{{}};
  ds4::http::Router keyed{{"k3y", {"*"}, {}, "127.0.0.1"}};
  boost::asio::io_context ioc;

  // `keyed_cors`: the CORS origins of the keyed server (none: no CORS headers at all).
  explicit GatewayFuzzEnv(std::vector<std::string> keyed_cors = {}) {
    keyed_config.api_key = "k3y";
    keyed_config.cors_origins = std::move(keyed_cors);
    service.set_backend(std::make_shared<ds4::test::ScriptedBackend>("fuzz reply", 512));
    service.set_admission_gate([] { return std::optional<std::string>("fuzzing: no work is run"); });
    ds4::http::add_endpoints(open, {open_config, service, metrics});
    ds4::http::add_endpoints(keyed, {keyed_config, service, metrics});
  }

  // Dispatches `req` on the keyed or the open router and checks the reply: answered at once, a
  // status in `allowed`, a valid JSON body whenever it says application/json and, when
  // `error_message_on_400`, an error.message string in every 400.
  void dispatch_and_check(const ds4::http::HttpRequest& req, bool use_key, const std::set<unsigned>& allowed,
                          bool error_message_on_400) {
    std::string_view target(req.target().data(), req.target().size());
    ds4::http::RequestContext ctx{req, ds4::http::Router::path_of(target), ioc.get_executor(),
                                  std::chrono::steady_clock::now()};
    const ds4::http::Router& router = use_key ? keyed : open;
    ds4::http::Router::Dispatched d = router.dispatch(ctx);
    check(!d.reply.channel, "a reply was deferred although the admission gate refuses all work");
    check(allowed.count(d.reply.head.status) == 1, "unexpected status");
    for (const auto& [name, value] : d.reply.head.headers) {
      if (name != "Content-Type" || value != "application/json") continue;
      boost::system::error_code jec;
      const boost::json::value v = boost::json::parse(d.reply.head.body, jec);
      check(!jec, "application/json body is not valid JSON");
      if (error_message_on_400 && d.reply.head.status == 400) {
        const auto* err = v.is_object() ? v.as_object().if_contains("error") : nullptr;
        const auto* msg = err && err->is_object() ? err->as_object().if_contains("message") : nullptr;
        check(msg && msg->is_string() && !msg->as_string().empty(), "a 400 without an error message");
      }
    }
  }
};

}  // namespace ds4::fuzz
