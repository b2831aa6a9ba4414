// The vocabulary check of vLLM and SGLang upstreams. See vocab_probe.hpp.
#include "gateway/upstream/vocab_probe.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <stdexcept>
#include <vector>

namespace ds4::upstream {
namespace json = boost::json;

std::string_view vocab_probe_text() {
  // The markers are special tokens on both sides: add_special_tokens false only stops vLLM and
  // SGLang from adding a BOS; special-token text in the prompt still maps to its special id.
  static constexpr std::string_view text =
      "The quick brown fox jumps over the lazy dog. 0123456789 +-*/=%\n"
      "def f(x):\n    return {\"a\": [x, 1.5e-3]}  // done\n\t\tint main() { return 0; }\n"
      "你好，世界。 こんにちは 😀🚀   \n\n\n"
      "<｜User｜>hi<｜Assistant｜></think><｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">"
      "</｜DSML｜invoke><｜end▁of▁sentence｜>";
  return text;
}

namespace {
std::string shown(const serving::EngineBackend& local, serving::Token t) {
  return json::serialize(json::value(json::string(local.token_bytes(t))));
}
}  // namespace

std::string vocab_probe_request(std::string_view model) {
  json::object o;
  o["model"] = model;
  o["prompt"] = vocab_probe_text();
  o["add_special_tokens"] = false;
  return json::serialize(o);
}

std::optional<std::string> vocab_probe_mismatch(std::string_view answer, const serving::EngineBackend& local) {
  std::vector<int64_t> theirs;
  try {
    const json::value parsed = json::parse(answer);
    for (const auto& t : parsed.as_object().at("tokens").as_array()) theirs.push_back(t.to_number<int64_t>());
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("malformed /tokenize answer: ") + e.what());
  }
  const auto ours = local.encode(vocab_probe_text());
  for (size_t i = 0; i < ours.size() || i < theirs.size(); ++i) {
    if (i < ours.size() && i < theirs.size() && theirs[i] == ours[i]) continue;
    if (i >= theirs.size())
      return fmt::format("its /tokenize answer ends at position {}, where engine.tokenizer has id {} ({})", i, ours[i],
                         shown(local, ours[i]));
    if (i >= ours.size())
      return fmt::format("its /tokenize answer has id {} at position {}, past engine.tokenizer's {} tokens", theirs[i],
                         i, ours.size());
    return fmt::format("its /tokenize answer differs at position {}: id {} where engine.tokenizer has id {} ({})", i,
                       theirs[i], ours[i], shown(local, ours[i]));
  }
  return std::nullopt;
}

}  // namespace ds4::upstream
