#pragma once
// A small blocking HTTP/1.1 client (Boost.Beast) for the engine protocol: one connection per
// call, a bounded connect, a JSON GET with a read timeout (the health check), and a POST whose
// chunked answer is read line by line as it arrives (a generation's events). A call can be
// aborted from another thread (shutdown()), which is how cancellation and deadlines reach a
// thread blocked in a read.
#include <atomic>
#include <boost/json/value.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds4::upstream {

// What speaks at the URL (docs/scale-out.md §vllm-and-sglang): another ds4d (the engine protocol,
// http://), or vLLM / SGLang through their OpenAI completions API (vllm+http://, sglang+http://).
enum class UpstreamKind { Ds4d, Vllm, Sglang };
const char* upstream_kind_name(UpstreamKind kind);  // "ds4d", "vllm", "sglang"

struct UpstreamUrl {
  std::string text;  // as configured, without a trailing slash
  std::string host, port;
  UpstreamKind kind = UpstreamKind::Ds4d;
};
// [vllm+|sglang+]http://HOST:PORT (a trailing slash allowed); throws std::invalid_argument saying
// what is wrong (another scheme, a path, no port).
UpstreamUrl parse_upstream_url(std::string_view url);

struct HttpAnswer {
  unsigned status = 0;
  std::string body;
};

// GET `target`; throws std::runtime_error naming the upstream on any failure (refused, timed
// out, malformed).
HttpAnswer http_get(const UpstreamUrl& url, std::string_view target, std::chrono::milliseconds timeout);
// POST a JSON `body` to `target`, likewise.
HttpAnswer http_post_json(const UpstreamUrl& url, std::string_view target, std::string body,
                          std::chrono::milliseconds timeout);

class StreamCall {
 public:
  StreamCall();
  ~StreamCall();
  StreamCall(const StreamCall&) = delete;
  StreamCall& operator=(const StreamCall&) = delete;

  // Connects, sends the POST and reads the answer's head. Returns the status; for a status other
  // than 200 the (short) body is read too (body()). Throws std::runtime_error when the upstream
  // cannot be reached or the exchange breaks.
  unsigned open(const UpstreamUrl& url, std::string_view target, std::string body,
                const std::vector<std::pair<std::string, std::string>>& headers,
                std::chrono::milliseconds connect_timeout);
  const std::string& body() const { return error_body_; }
  // Reads the streamed body, calling `line` for each complete line, until the answer ends
  // (true) or `line` returns false (false). Throws std::runtime_error when the connection breaks
  // before the end.
  bool read_lines(const std::function<bool(std::string_view)>& line);
  // Any thread: aborts a blocked open() or read_lines() (they then throw).
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string error_body_;
};

}  // namespace ds4::upstream
