#pragma once
// What an endpoint handler gets (the request and where it runs) and gives back (a Reply).
//
// A Reply is either complete (status, headers, body, written at once) or deferred: a
// ResponseChannel that the engine worker fills later (a generation's JSON body or its SSE
// stream). Errors are complete Replies in the error shape of the request's API:
//   OpenAI (chat, completions, responses) {"error":{"message","type","param","code"}};
//   Anthropic (/v1/messages) {"type":"error","error":{"type","message"}} with Anthropic's type
//   names (invalid_request_error, authentication_error, not_found_error, rate_limit_error,
//   api_error, overloaded_error), plus `param`/`code` inside `error` when known (extra keys
//   that the SDKs ignore but that say which field was wrong).
// The transport answers its own errors (401, 404, 413, ... before any handler runs) in them too.
#include <boost/asio/any_io_executor.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "gateway/transport/response_channel.hpp"

namespace ds4::http {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

struct RequestContext {
  const HttpRequest& request;
  std::string_view path;                  // target without the query string
  boost::asio::any_io_executor executor;  // the connection's strand (for ResponseChannel)
  std::chrono::steady_clock::time_point received;
};

struct Reply {
  ResponseHead head;                         // used when channel is null
  std::shared_ptr<ResponseChannel> channel;  // deferred reply

  static Reply json(unsigned status, const boost::json::value& body);
  static Reply text(unsigned status, std::string content_type, std::string body);
  static Reply deferred(std::shared_ptr<ResponseChannel> channel);
};

// The OpenAI error shape: {"error":{"message","type","param","code"}}. `type` follows the
// status (invalid_request_error for 4xx but 401 authentication_error, 429 rate_limit_error,
// 503 service_unavailable_error, 5xx server_error) unless given. `param`/`code` are null when
// empty.
boost::json::value api_error_body(unsigned status, std::string_view message, std::string_view param = {},
                                  std::string_view code = {}, std::string_view type = {});
Reply api_error(unsigned status, std::string_view message, std::string_view param = {}, std::string_view code = {},
                std::string_view type = {});

enum class ApiStyle { OpenAI, Anthropic };

// The error shape a request path answers in: Anthropic for /v1/messages and below it, OpenAI
// elsewhere. The router and the connection use it for the errors they raise before any handler
// runs (401, 403, 404, 405, 413, 415, 431, malformed requests, 503 busy).
ApiStyle api_style_of_path(std::string_view path);

boost::json::value error_body(ApiStyle style, unsigned status, std::string_view message, std::string_view param = {},
                              std::string_view code = {});
Reply error_reply(ApiStyle style, unsigned status, std::string_view message, std::string_view param = {},
                  std::string_view code = {});

}  // namespace ds4::http
