#pragma once
// Bounds on the identifiers a request carries (model and tool names, call ids, response and user
// ids, stop strings), checked on every JSON body before an endpoint parses it.
//
// These strings are echoed (model), logged, hashed into session keys, matched at every token
// (stop strings) or written into prompts as names; none needs more than a few hundred bytes, so a
// 1 MB model name is a malformed request, not a name. A value over its bound is a 400 naming the
// field (`param` is its JSON path) and the bound; the value itself is never echoed. The bounds
// and the fields they cover are listed in docs/api.md §identifier-limits. Fields of every API
// are checked on every endpoint: a key another API defines is bounded all the same.
#include <boost/json/object.hpp>
#include <cstddef>

namespace ds4::http {

inline constexpr size_t kMaxNameBytes = 256;         // model, tool and function names
inline constexpr size_t kMaxIdBytes = 1024;          // call ids, response ids, user and session ids
inline constexpr size_t kMaxStopStrings = 16;        // stop / stop_sequences entries
inline constexpr size_t kMaxStopStringBytes = 1024;  // each of them

// Throws protocol::RequestError for the first field over its bound.
void check_request_limits(const boost::json::object& body);

}  // namespace ds4::http
