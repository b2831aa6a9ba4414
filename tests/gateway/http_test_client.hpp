#pragma once
// A small synchronous HTTP/1.1 client on Boost.Beast for the gateway tests: one TCP connection
// (kept alive across requests), raw access for tests that send malformed or oversized input,
// and an SSE reader that returns the `data:` payloads of a streamed response.
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <string>
#include <vector>

namespace ds4::test {

namespace bhttp = boost::beast::http;

class HttpTestClient {
 public:
  explicit HttpTestClient(uint16_t port) : socket_(ioc_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }

  using Response = bhttp::response<bhttp::string_body>;

  Response request(bhttp::verb method, const std::string& target, const std::string& body = {},
                   std::vector<std::pair<std::string, std::string>> headers = {}, bool keep_alive = true) {
    send(method, target, body, headers, keep_alive);
    return read();
  }

  void send(bhttp::verb method, const std::string& target, const std::string& body = {},
            const std::vector<std::pair<std::string, std::string>>& headers = {}, bool keep_alive = true) {
    bhttp::request<bhttp::string_body> req{method, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    for (auto& [k, v] : headers) req.set(k, v);
    if (!body.empty() && req.find(bhttp::field::content_type) == req.end())
      req.set(bhttp::field::content_type, "application/json");
    req.body() = body;
    req.keep_alive(keep_alive);
    req.prepare_payload();
    bhttp::write(socket_, req);
  }

  // The final response; interim 1xx responses before it are skipped (and counted), as every
  // HTTP/1.1 client must.
  Response read() {
    for (;;) {
      bhttp::response_parser<bhttp::string_body> parser;
      parser.body_limit(64 << 20);
      bhttp::read(socket_, buffer_, parser);
      Response res = parser.release();
      if (res.result_int() >= 200 || res.result_int() == 101) return res;
      ++interim_responses;
    }
  }

  int interim_responses = 0;

  void write_raw(const std::string& bytes) { boost::asio::write(socket_, boost::asio::buffer(bytes)); }

  // Whether the server closed the connection (reads EOF).
  bool closed_by_server() {
    boost::beast::error_code ec;
    char c;
    socket_.read_some(boost::asio::buffer(&c, 1), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

  void close() {
    boost::beast::error_code ec;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  boost::asio::ip::tcp::socket& socket() { return socket_; }

  // The JSON payloads of every `data:` line of an SSE body, in order ("[DONE]" included).
  static std::vector<std::string> sse_data(const std::string& body) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < body.size()) {
      size_t end = body.find('\n', pos);
      if (end == std::string::npos) end = body.size();
      std::string line = body.substr(pos, end - pos);
      if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
      pos = end + 1;
    }
    return out;
  }

 private:
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace ds4::test
