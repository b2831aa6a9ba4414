#pragma once
// SSE bodies as (event name, JSON data) pairs, for the HTTP tests of the streamed APIs.
#include <boost/json.hpp>
#include <string>
#include <vector>

namespace ds4::test {

struct SseEvent {
  std::string name;  // the `event:` line before the data ("" when none, as in OpenAI chat)
  boost::json::value data;
};

// "event: X\ndata: Y" pairs of an SSE body; comments and `data: [DONE]` are skipped.
inline std::vector<SseEvent> sse_events(const std::string& body) {
  std::vector<SseEvent> out;
  std::string name;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    std::string line = body.substr(pos, end - pos);
    if (line.rfind("event: ", 0) == 0) name = line.substr(7);
    if (line.rfind("data: ", 0) == 0 && line != "data: [DONE]")
      out.push_back({name, boost::json::parse(line.substr(6))});
    pos = end + 1;
  }
  return out;
}

inline std::vector<std::string> sse_names(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.name);
  return out;
}

}  // namespace ds4::test
