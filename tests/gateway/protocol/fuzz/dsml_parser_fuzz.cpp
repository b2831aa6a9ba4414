// libFuzzer target: arbitrary bytes as sampled model output -> Utf8Assembler -> OutputParser.
// Invariants checked (abort on violation):
//  * the assembler emits valid UTF-8 and its output does not depend on how input is split;
//  * parser events do not depend on the split (merged deltas and structural events compared);
//  * each call's argument fragments concatenate to ToolCallEnd::arguments_json, and arguments
//    flagged valid parse as JSON.
#include <boost/json/parse.hpp>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/protocol/dsml_parser.hpp"
#include "gateway/protocol/utf8_assembler.hpp"

using namespace ds4::protocol;

namespace {

ToolCallIdGenerator ids() {
  auto n = std::make_shared<int>(0);
  return [n] { return "call_" + std::to_string(++*n); };
}

// Canonical form: merged deltas per kind plus structural events, as strings.
std::vector<std::string> canon(const std::vector<Event>& events) {
  std::vector<std::string> out;
  std::string last;
  std::map<size_t, std::string> fragments;
  for (const Event& e : events) {
    std::string kind, text;
    if (auto* r = std::get_if<ReasoningDelta>(&e)) kind = "R", text = r->text;
    else if (auto* c = std::get_if<ContentDelta>(&e)) kind = "C", text = c->text;
    else if (auto* a = std::get_if<ToolCallArgumentsDelta>(&e)) {
      kind = "A" + std::to_string(a->index), text = a->fragment;
      fragments[a->index] += a->fragment;
    } else if (auto* b = std::get_if<ToolCallBegin>(&e)) text = "B" + b->id + " " + b->name;
    else if (auto* en = std::get_if<ToolCallEnd>(&e)) {
      if (fragments[en->index] != en->arguments_json) std::abort();
      if (en->arguments_valid) {
        boost::system::error_code ec;
        (void)boost::json::parse(en->arguments_json, ec);
        if (ec) std::abort();
      }
      text = "E" + en->arguments_json + "|" + en->exact_dsml_block_bytes;
    } else if (auto* d = std::get_if<ToolCallsDone>(&e)) text = "D" + d->exact_dsml_block;
    else if (auto* er = std::get_if<ToolCallsError>(&e)) text = "X" + std::to_string(static_cast<int>(er->status));
    if (!kind.empty() && kind == last) {
      out.back() += text;
    } else {
      out.push_back(kind + ":" + text);
      last = kind;
    }
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  Utf8Assembler a;
  std::string out = a.push(s);
  return out == s && a.flush().empty();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool thinking = data[0] & 1;
  const size_t step = 1 + (data[0] >> 1) % 7;
  std::string_view raw(reinterpret_cast<const char*>(data + 1), size - 1);

  Utf8Assembler whole_asm;
  std::string text = whole_asm.push(raw);
  text += whole_asm.flush();
  if (!valid_utf8(text)) std::abort();
  Utf8Assembler split_asm;
  std::string split_text;
  for (size_t i = 0; i < raw.size(); i += step) split_text += split_asm.push(raw.substr(i, step));
  split_text += split_asm.flush();
  if (split_text != text) std::abort();

  OutputParser whole(thinking, ids());
  std::vector<Event> a = whole.feed(text);
  for (auto& e : whole.finish()) a.push_back(std::move(e));
  OutputParser split(thinking, ids());
  std::vector<Event> b;
  for (size_t i = 0; i < text.size(); i += step)
    for (auto& e : split.feed(std::string_view(text).substr(i, step))) b.push_back(std::move(e));
  for (auto& e : split.finish()) b.push_back(std::move(e));
  if (canon(a) != canon(b)) std::abort();
  return 0;
}
