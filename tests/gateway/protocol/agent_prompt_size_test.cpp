// The embedded model's context against what the real agents send: every request recorded from
// Claude Code, Codex and opencode (tests/clients/recordings) is parsed, rendered and tokenized as
// the server does it, in the embedded model's own 4K-token vocabulary. A turn's answer comes back
// in the next request, so what one turn needs is its prompt plus the output the agent asks for
// (Claude Code max_tokens 32000, opencode 8192, Codex none); the context must hold twice the
// largest of these (docs/agents.md §context-and-output-limits). With 65,536 tokens a fresh Claude
// Code install got a 400 on its second turn: a 20.8K-token prompt plus a first answer that ran
// long came to 65,620 tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "gateway/protocol/anthropic_request.hpp"
#include "gateway/protocol/chat_render.hpp"
#include "gateway/protocol/chat_request.hpp"
#include "gateway/protocol/responses_request.hpp"

namespace ds4::protocol {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

// The rendered prompt of one recorded request and the output limit it asks for (0: none), or
// nullopt for a body the recording left out.
std::optional<std::pair<std::string, uint32_t>> rendered(const json::object& record) {
  const json::value* body = record.if_contains("body");
  if (!body || !body->is_object()) return std::nullopt;
  const std::string url(record.at("url").as_string());
  ChatRequest chat;
  if (url.starts_with("/v1/messages")) chat = parse_anthropic_request(*body).chat;
  else if (url.starts_with("/v1/responses")) chat = parse_responses_request(*body).chat;
  else if (url.starts_with("/v1/chat/completions")) chat = parse_chat_request(*body);
  else return std::nullopt;
  return std::make_pair(render_chat(chat, nullptr, ContractMode::Warn).text, chat.max_tokens.value_or(0));
}

TEST(AgentPromptSize, TheEmbeddedModelsContextHoldsTwiceTheLargestRecordedAgentTurn) {
  auto file = gguf::GgufFile::open(DS4D_EMBEDDED_MODEL);
  const auto tokenizer = tokenizer::Tokenizer::from_gguf(file);
  const uint64_t context = file.get<uint64_t>("deepseek4.context_length");
  struct Need {
    size_t prompt = 0, output = 0;
  };
  std::map<std::string, Need> largest;  // agent -> its largest prompt + output
  for (const auto& entry : fs::directory_iterator(DS4D_RECORDINGS_DIR)) {
    if (entry.path().extension() != ".jsonl") continue;
    const std::string name = entry.path().stem().string();
    const std::string agent = name.starts_with("claude-code") ? "claude-code" : name.substr(0, name.find('-'));
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      auto r = rendered(json::parse(line).as_object());
      if (!r) continue;
      Need n{tokenizer.encode(r->first).size(), r->second};
      Need& best = largest[agent];
      if (n.prompt + n.output > best.prompt + best.output) best = n;
    }
  }
  ASSERT_EQ(largest.size(), 3u) << "claude-code, codex and opencode recordings";
  size_t most = 0;
  for (const auto& [agent, n] : largest) {
    std::printf("%s: prompt %zu tokens + output limit %zu\n", agent.c_str(), n.prompt, n.output);
    most = std::max(most, n.prompt + n.output);
  }
  std::printf("context %llu tokens: %.2fx the largest turn\n", static_cast<unsigned long long>(context),
              double(context) / double(most));
  EXPECT_GE(context, 2 * most);
}

}  // namespace
}  // namespace ds4::protocol
