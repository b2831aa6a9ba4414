// libFuzzer target: request JSON for every POST endpoint, straight into the router.
//
// http_request_fuzz starts from raw HTTP bytes, so most of its inputs die in the HTTP parser;
// this target spends every execution on the JSON body. The first input byte picks the endpoint
// (and whether the keyed router is used), the rest is the body of a well-formed POST with
// Content-Type application/json. Endpoints the build does not have answer 404, which is fine:
// the list names every chat API the gateway serves or is meant to serve.
// Same scripted engine and refusing admission gate as http_request_fuzz (nothing runs
// asynchronously), same invariants: an allowed status, valid JSON whenever the reply says
// application/json, and a 400 body that names what is wrong. A violation aborts.
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

constexpr const char* kTargets[] = {"/v1/chat/completions", "/v1/completions", "/tokenize",
                                    "/detokenize",          "/v1/messages",    "/v1/responses"};
constexpr size_t kTargetCount = sizeof kTargets / sizeof kTargets[0];

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
  const bool use_key = (data[0] & 0x80) != 0;
  const char* target = kTargets[(data[0] & 0x7f) % kTargetCount];
  namespace bhttp = boost::beast::http;
  ds4::http::HttpRequest req{bhttp::verb::post, target, 11};
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::content_type, "application/json");
  if (use_key) req.set(bhttp::field::authorization, "Bearer k3y");
  req.body().assign(reinterpret_cast<const char*>(data + 1), size - 1);
  req.prepare_payload();
  ds4::http::RequestContext ctx{req, ds4::http::Router::path_of(target), env->ioc.get_executor(),
                                std::chrono::steady_clock::now()};
  const ds4::http::Router& router = use_key ? env->keyed : env->open;
  ds4::http::Router::Dispatched d = router.dispatch(ctx);
  check(!d.reply.channel, "a reply was deferred although the admission gate refuses all work");
  static const std::set<unsigned> allowed = {200, 400, 403, 404, 413, 415, 422, 429, 503};
  check(allowed.count(d.reply.head.status) == 1, "unexpected status");
  for (const auto& [name, value] : d.reply.head.headers) {
    if (name == "Content-Type" && value == "application/json") {
      boost::system::error_code jec;
      const boost::json::value v = boost::json::parse(d.reply.head.body, jec);
      check(!jec, "application/json body is not valid JSON");
      if (d.reply.head.status == 400) {
        const auto* err = v.is_object() ? v.as_object().if_contains("error") : nullptr;
        const auto* msg = err && err->is_object() ? err->as_object().if_contains("message") : nullptr;
        check(msg && msg->is_string() && !msg->as_string().empty(), "a 400 without an error message");
      }
    }
  }
  return 0;
}
