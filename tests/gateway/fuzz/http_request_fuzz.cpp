// libFuzzer target: raw bytes -> HTTP/1.1 request parsing with ds4d's limits -> routing, auth,
// JSON body parsing and the endpoint handlers, up to the point where a job would be queued.
//
// The protocol layer fuzzes parse_chat_request on its own; this target covers what lies in front
// of it and around it: Beast's parser under our header/body limits, Router (OPTIONS, 404, 405,
// bearer auth, query stripping), every endpoint's body handling, rendering and tokenization on a
// scripted engine whose admission gate refuses all work (so nothing runs asynchronously).
// Set-up and invariants: gateway_fuzz_env.hpp (a status the gateway is allowed to send, and a
// body that is valid JSON whenever the reply says application/json). The keyed server allows
// CORS from any origin, so preflights and CORS headers are exercised too.
#include <boost/beast/http.hpp>

#include "tests/gateway/fuzz/gateway_fuzz_env.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto* env = new ds4::fuzz::GatewayFuzzEnv({"*"});
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
  static const std::set<unsigned> allowed = {200, 204, 400, 401, 403, 404, 405, 413, 415, 422, 429, 503};
  env->dispatch_and_check(req, use_key, allowed, /*error_message_on_400=*/false);
  return 0;
}
