// libFuzzer target: request JSON for every POST endpoint, straight into the router.
//
// http_request_fuzz starts from raw HTTP bytes, so most of its inputs die in the HTTP parser;
// this target spends every execution on the JSON body. The first input byte picks the endpoint
// (and whether the keyed router is used), the rest is the body of a well-formed POST with
// Content-Type application/json. Endpoints the build does not have answer 404, which is fine:
// the list names every chat API the gateway serves or is meant to serve.
// Set-up and invariants: gateway_fuzz_env.hpp (an allowed status, valid JSON whenever the reply
// says application/json, and a 400 body that names what is wrong).
#include <boost/beast/http.hpp>

#include "tests/gateway/fuzz/gateway_fuzz_env.hpp"

namespace {

constexpr const char* kTargets[] = {"/v1/chat/completions", "/v1/completions", "/tokenize",
                                    "/detokenize",          "/v1/messages",    "/v1/responses"};
constexpr size_t kTargetCount = sizeof kTargets / sizeof kTargets[0];

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto* env = new ds4::fuzz::GatewayFuzzEnv();
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
  static const std::set<unsigned> allowed = {200, 400, 403, 404, 413, 415, 422, 429, 503};
  env->dispatch_and_check(req, use_key, allowed, /*error_message_on_400=*/true);
  return 0;
}
