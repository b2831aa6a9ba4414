// Helpers shared by the protocol tests: collapse parser events into a canonical form so that
// streams fed with different splits can be compared.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "gateway/protocol/dsml_parser.hpp"

namespace ds4::protocol::test {

// Adjacent deltas of the same kind (and call index) merged; structural events kept as they are.
inline std::vector<std::string> normalize(const std::vector<Event>& events) {
  std::vector<std::string> out;
  std::string last_kind;
  for (const Event& e : events) {
    std::string kind, text;
    bool mergeable = true;
    if (auto* r = std::get_if<ReasoningDelta>(&e)) kind = "reasoning", text = r->text;
    else if (auto* c = std::get_if<ContentDelta>(&e)) kind = "content", text = c->text;
    else if (auto* a = std::get_if<ToolCallArgumentsDelta>(&e))
      kind = "args" + std::to_string(a->index), text = a->fragment;
    else {
      mergeable = false;
      if (auto* b = std::get_if<ToolCallBegin>(&e))
        text = "begin " + std::to_string(b->index) + " " + b->id + " " + b->name;
      else if (auto* en = std::get_if<ToolCallEnd>(&e))
        text = "end " + std::to_string(en->index) + " " + en->arguments_json + " | " + en->exact_dsml_block_bytes +
               (en->arguments_valid ? "" : " (invalid)");
      else if (auto* d = std::get_if<ToolCallsDone>(&e)) text = "done " + d->exact_dsml_block;
      else if (auto* er = std::get_if<ToolCallsError>(&e))
        text = "error " + std::to_string(static_cast<int>(er->status));  // raw_text: bytes seen so far
    }
    if (mergeable && kind == last_kind && !out.empty()) {
      out.back() += text;
    } else if (mergeable) {
      out.push_back(kind + ": " + text);
      last_kind = kind;
    } else {
      out.push_back(text);
      last_kind.clear();
    }
  }
  return out;
}

inline std::vector<Event> append(std::vector<Event> a, std::vector<Event> b) {
  for (auto& e : b) a.push_back(std::move(e));
  return a;
}

// Deterministic ids for comparisons: call_0000…0001, call_0000…0002, ...
inline ToolCallIdGenerator counting_ids() {
  auto n = std::make_shared<int>(0);
  return [n] {
    std::string digits = std::to_string(++*n);
    return "call_" + std::string(32 - digits.size(), '0') + digits;
  };
}

inline std::vector<Event> parse_whole(std::string_view text, bool thinking) {
  OutputParser p(thinking, counting_ids());
  std::vector<Event> fed = p.feed(text);
  return append(std::move(fed), p.finish());
}

inline std::vector<Event> parse_bytewise(std::string_view text, bool thinking) {
  OutputParser p(thinking, counting_ids());
  std::vector<Event> all;
  for (char c : text) all = append(std::move(all), p.feed(std::string_view(&c, 1)));
  return append(std::move(all), p.finish());
}

}  // namespace ds4::protocol::test
