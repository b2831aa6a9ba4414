// RequestError: a client request that cannot be served as written.
//
// Every parser in ds4::protocol reports a bad field by throwing this, with `param` set to the
// JSON path of the offending field (`messages[3].content`, `tools[0].function.name`, or a
// top-level key like `max_tokens`) and `message` a sentence a client developer can act on. The
// HTTP layer turns it into a 400 `{"error":{"message","type":"invalid_request_error","param"}}`.
#pragma once

#include <exception>
#include <string>

namespace ds4::protocol {

struct RequestError : std::exception {
  std::string param;    // JSON path of the bad field; empty when the body as a whole is wrong
  std::string message;  // human-readable reason, already including what was expected

  RequestError(std::string param_path, std::string text) : param(std::move(param_path)), message(std::move(text)) {}
  const char* what() const noexcept override { return message.c_str(); }
};

}  // namespace ds4::protocol
