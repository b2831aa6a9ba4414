#pragma once
// A minimal blocking HTTP/1.1 client for the daemon tests: one request per connection
// (Connection: close), the whole response read until EOF.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace ds4::testing {

struct HttpResponse {
  int status = 0;   // 0: no connection / no response
  std::string raw;  // status line, headers and body
  std::string body() const {
    const size_t p = raw.find("\r\n\r\n");
    return p == std::string::npos ? std::string() : raw.substr(p + 4);
  }
};

inline HttpResponse http_request(uint16_t port, const std::string& method, const std::string& path,
                                 const std::string& body = "") {
  HttpResponse r;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return r;
  }
  const std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                          (body.empty() ? std::string() : "Content-Type: application/json\r\n") +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  size_t sent = 0;
  while (sent < req.size()) {
    const ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  char buf[8192];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) r.raw.append(buf, static_cast<size_t>(n));
  close(fd);
  if (r.raw.rfind("HTTP/1.1 ", 0) == 0) r.status = std::stoi(r.raw.substr(9, 3));
  return r;
}

}  // namespace ds4::testing
