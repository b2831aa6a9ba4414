// libFuzzer target: client text never becomes a control token (issue 28,
// docs/chat-format.md §client-text-is-plain). The input is cut at 0xFF bytes into client strings
// that fill every channel the renderer writes client text into; the prompt is tokenized as the
// server does, with the vocabulary of the GGUF named by DS4D_FUZZ_TOKENIZER_MODEL. The channels
// and the three checks: docs/faults.md §client-text-target.
#include <boost/json.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "gateway/protocol/chat_render.hpp"

namespace {

using ds4::protocol::ChatRequest;
using ds4::protocol::Message;
using ds4::protocol::Role;

std::unique_ptr<ds4::tokenizer::Tokenizer> g_tok;
std::set<int32_t> g_special;  // the seven special strings' ids

bool is_special(int32_t id) { return g_special.count(id) != 0; }

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "client text property broken: %s\n", what);
    std::abort();
  }
}

// Eight client strings (missing ones empty).
std::vector<std::string> strings_of(std::string_view data) {
  std::vector<std::string> out(8);
  size_t i = 0;
  for (char c : data) {
    if (static_cast<unsigned char>(c) == 0xFF) {
      if (++i == out.size()) break;
    } else {
      out[i].push_back(c);
    }
  }
  return out;
}

ChatRequest request_of(const std::vector<std::string>& s, bool thinking) {
  ChatRequest r;
  r.thinking = thinking ? ds4::protocol::Thinking::High : ds4::protocol::Thinking::Off;
  r.tools.push_back(boost::json::object{{"name", "f"}, {"description", s[0]}});
  r.messages.push_back(Message{Role::System, s[1], {}, {}, {}});
  r.messages.push_back(Message{Role::User, s[2], {}, {}, {}});
  Message a{Role::Assistant, s[3], s[4], {}, {}};
  const std::string arguments = boost::json::serialize(boost::json::object{{s[5].empty() ? "k" : s[5], s[6]}});
  a.tool_calls.push_back({"call_1", s[5].empty() ? "g" : s[5], arguments});
  r.messages.push_back(std::move(a));
  r.messages.push_back(Message{Role::Tool, s[7], {}, {}, "call_1"});
  return r;
}

std::vector<int32_t> controls(const std::vector<int32_t>& ids) {
  std::vector<int32_t> out;
  for (int32_t id : ids)
    if (is_special(id)) out.push_back(id);
  return out;
}

// Encodes as the server does and checks the first and third property; returns the ids.
std::vector<int32_t> encode_checked(const std::string& text, const std::vector<std::pair<size_t, size_t>>& plain) {
  const std::vector<int32_t> ids = g_tok->encode_with_plain(text, plain);
  size_t offset = 0;
  for (int32_t id : ids) {
    const size_t end = offset + g_tok->token_bytes(id).size();
    if (is_special(id))
      for (auto [b, e] : plain) check(!(b < end && offset < e), "a control token holds client bytes");
    offset = end;
  }
  check(g_tok->decode(ids) == text, "decode(tokens) is not the rendered text");
  return ids;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* model = std::getenv("DS4D_FUZZ_TOKENIZER_MODEL");
  if (!model) {
    std::fprintf(stderr, "set DS4D_FUZZ_TOKENIZER_MODEL to a DS4 GGUF with a tokenizer\n");
    std::exit(2);
  }
  auto file = ds4::gguf::GgufFile::open(model);
  g_tok = std::make_unique<ds4::tokenizer::Tokenizer>(ds4::tokenizer::Tokenizer::from_gguf(file));
  using T = ds4::tokenizer::Tokenizer;
  for (std::string_view t : {T::kBos, T::kEos, T::kUser, T::kAssistant, T::kThinkStart, T::kThinkEnd, T::kDsml})
    if (auto id = g_tok->special(t)) g_special.insert(*id);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> s = strings_of({reinterpret_cast<const char*>(data), size});
  const std::vector<std::string> harmless(s.size(), "x");
  const bool thinking = size % 2 == 1;

  const auto r = ds4::protocol::render_chat(request_of(s, thinking), nullptr, ds4::protocol::ContractMode::Warn);
  const auto h = ds4::protocol::render_chat(request_of(harmless, thinking), nullptr, ds4::protocol::ContractMode::Warn);
  check(controls(encode_checked(r.text, r.plain_spans)) == controls(encode_checked(h.text, h.plain_spans)),
        "client text changed the prompt's control tokens");

  ds4::protocol::CompletionRequest c;
  c.thinking = thinking ? ds4::protocol::Thinking::High : ds4::protocol::Thinking::Off;
  const auto frame = ds4::protocol::completion_frame(c);
  for (const std::string* prompt : {&s[0], &harmless[0]}) {
    const std::string text = frame.head + *prompt + frame.tail;
    const std::vector<std::pair<size_t, size_t>> plain{{frame.head.size(), frame.head.size() + prompt->size()}};
    const auto ids = encode_checked(text, plain);
    check(controls(ids) == controls(g_tok->encode(frame.head + "x" + frame.tail)),
          "the completions prompt changed the frame's control tokens");
  }
  return 0;
}
