// libFuzzer target: raw bytes -> HTTP/1.1 request parsing with ds4d's limits -> routing, auth,
// JSON body parsing and the endpoint handlers, up to the point where a job would be queued.
//
// The protocol layer fuzzes parse_chat_request on its own; this target covers what lies in front
// of it and around it: Beast's parser under our header/body limits, Router (OPTIONS, 404, 405,
// bearer auth, query stripping), every endpoint's body handling, rendering and tokenization on a
// scripted engine whose admission gate refuses all work (so nothing runs asynchronously).
// Invariants checked on every reply: a status the gateway is allowed to send, and a body that
// is valid JSON whenever the reply says application/json. A violation aborts (a fuzzer finding).
#include <boost/asio/io_context.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "gateway/http/endpoints.hpp"
#include "gateway/http/router.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "tests/gateway/scripted_backend.hpp"

namespace {

struct Env {
  ds4::serving::Metrics metrics;
  ds4::serving::Service service{{}, metrics};
  ds4::http::ServerConfig open_config;
  ds4::http::ServerConfig keyed_config;
  ds4::http::Router open{{}};
  ds4::http::Router keyed{{"k3y", {"*"}, {}, "127.0.0.1"}};
  boost::asio::io_context ioc;

  Env() {
    keyed_config.api_key = "k3y";
    keyed_config.cors_origins = {"*"};
    service.set_backend(std::make_shared<ds4::test::ScriptedBackend>("fuzz reply", 512));
    service.set_admission_gate([] { return std::optional<std::string>("fuzzing: no work is run"); });
    ds4::http::add_endpoints(open, {open_config, service, metrics});
    ds4::http::add_endpoints(keyed, {keyed_config, service, metrics});
  }
};

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Env* env = new Env();
  if (size == 0) return 0;
  bool use_key = data[0] & 1;
  namespace bhttp = boost::beast::http;
  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(8192);
  parser.body_limit(65536);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data + 1, size - 1), ec);
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;
  ds4::http::HttpRequest req = parser.release();
  std::string_view target(req.target().data(), req.target().size());
  ds4::http::RequestContext ctx{req, ds4::http::Router::path_of(target), env->ioc.get_executor(),
                                std::chrono::steady_clock::now()};
  const ds4::http::Router& router = use_key ? env->keyed : env->open;
  ds4::http::Router::Dispatched d = router.dispatch(ctx);
  check(!d.reply.channel, "a reply was deferred although the admission gate refuses all work");
  static const std::set<unsigned> allowed = {200, 204, 400, 401, 403, 404, 405, 413, 415, 422, 429, 503};
  check(allowed.count(d.reply.head.status) == 1, "unexpected status");
  for (const auto& [name, value] : d.reply.head.headers) {
    if (name == "Content-Type" && value == "application/json") {
      boost::system::error_code jec;
      boost::json::parse(d.reply.head.body, jec);
      check(!jec, "application/json body is not valid JSON");
    }
  }
  return 0;
}
