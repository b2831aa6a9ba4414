// libFuzzer target: arbitrary bytes -> JSON -> parse_chat_request / parse_completion_request ->
// render_chat. Invariants: parsing either succeeds or throws RequestError (nothing else), and a
// successful render has sorted in-bounds client spans and starts with BOS. Replay: when every
// assistant turn with tool calls is remembered with its canonical block as the "sampled" bytes,
// a Strict render must report no violations and produce exactly the store-less text (replay by
// id puts each block back where it came from, and nowhere else).
#include <boost/json/parse.hpp>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "gateway/protocol/chat_render.hpp"
#include "gateway/protocol/chat_request.hpp"
#include "gateway/protocol/dsml_format.hpp"

using namespace ds4::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  boost::system::error_code ec;
  boost::json::parse_options opts;
  opts.max_depth = 64;
  boost::json::value body = boost::json::parse(text, ec, {}, opts);
  if (ec) return 0;
  try {
    ChatRequest req = parse_chat_request(body);
    const RenderOptions options{size % 2 ? 393216u : 4096u, true};
    RenderResult r = render_chat(req, nullptr, ContractMode::Warn, options);
    if (r.text.rfind("<｜begin▁of▁sentence｜>", 0) != 0) std::abort();
    size_t last = 0;
    for (auto [b, e] : r.client_spans) {
      if (b < last || b >= e || e > r.text.size()) std::abort();
      last = e;
    }

    ContractStore store(1 << 24);
    std::set<std::string> ids;
    bool unique = true;
    for (const Message& m : req.messages) {
      if (m.role != Role::Assistant || m.tool_calls.empty()) continue;
      TurnContract turn;
      turn.reasoning = m.reasoning;
      turn.content = m.content;
      dsml::render_tool_calls(m.tool_calls, turn.dsml_block);
      for (const ToolCall& c : m.tool_calls) {
        unique = unique && ids.insert(c.id).second;
        turn.calls.push_back({c.id, c.name, c.arguments});
      }
      store.remember(turn);
    }
    if (unique) {
      RenderResult replayed = render_chat(req, &store, ContractMode::Strict, options);
      if (!replayed.violations.empty() || replayed.text != r.text) std::abort();
    }
  } catch (const RequestError&) {
  }
  try {
    CompletionRequest c = parse_completion_request(body);
    (void)completion_frame(c);
  } catch (const RequestError&) {
  }
  return 0;
}
