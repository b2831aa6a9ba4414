// The Anthropic Messages and OpenAI Responses request mappings, on requests shaped like the ones
// Claude Code 2.1 and Codex CLI 0.171 send (fixtures/: system blocks with cache_control, the
// billing header block, a system-role message inside messages, thinking adaptive, output_config,
// context_management, metadata, server tools; developer messages, reasoning items with
// encrypted_content, non-function tools, hosted call items, store/include/prompt_cache_key),
// plus the reasoning token and the mapping errors.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <fstream>
#include <sstream>

#include "gateway/protocol/anthropic_request.hpp"
#include "gateway/protocol/chat_render.hpp"
#include "gateway/protocol/reasoning_token.hpp"
#include "gateway/protocol/responses_request.hpp"

namespace ds4::protocol {
namespace {

namespace json = boost::json;

json::value fixture(const std::string& name) {
  std::ifstream in(std::string(DS4D_PROTOCOL_FIXTURES) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

TEST(AnthropicRequest, ClaudeCodeShapedRequestMapsOntoTheChatConversation) {
  AnthropicRequest r = parse_anthropic_request(fixture("claude_code_messages.json"));
  const auto& m = r.chat.messages;
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].role, Role::System);
  EXPECT_EQ(m[0].content,
            "You are Claude Code, Anthropic's official CLI for Claude.\n"
            "You are an interactive CLI tool that helps users with software engineering tasks.");
  EXPECT_EQ(m[1].role, Role::User);
  EXPECT_EQ(m[1].content,
            "<system-reminder>\nThe working directory is /tmp/work.\n</system-reminder>\n\nList the files here.");
  EXPECT_EQ(m[2].role, Role::Assistant);
  EXPECT_EQ(m[2].reasoning, "The user wants a listing; use Bash.");
  EXPECT_EQ(m[2].content, "I'll list them.");
  ASSERT_EQ(m[2].tool_calls.size(), 1u);
  EXPECT_EQ(m[2].tool_calls[0].id, "call_0123456789abcdef0123456789abcdef");
  EXPECT_EQ(m[2].tool_calls[0].arguments, R"({"command":"ls","description":"List files"})");
  EXPECT_EQ(m[3].role, Role::Tool);
  EXPECT_EQ(m[3].tool_call_id, "call_0123456789abcdef0123456789abcdef");
  EXPECT_EQ(m[3].content, "a.txt\nb.txt");
  EXPECT_EQ(m[4].role, Role::User);
  EXPECT_EQ(m[4].content, "Thanks.");
  EXPECT_EQ(m[5].role, Role::System);
  EXPECT_EQ(r.message_paths, (std::vector<std::string>{"system", "messages[0]", "messages[1]", "messages[2]",
                                                       "messages[2]", "messages[3]"}));
  ASSERT_EQ(r.chat.tools.size(), 2u);
  EXPECT_EQ(r.chat.tools[0].at("name").as_string(), "Bash");
  EXPECT_TRUE(r.chat.tools[0].contains("parameters"));
  EXPECT_EQ(r.ignored_tools, std::vector<std::string>{"web_search"});
  EXPECT_EQ(r.chat.tool_choice, "auto");
  EXPECT_EQ(r.chat.thinking, Thinking::High);
  EXPECT_TRUE(r.chat.stream);
  EXPECT_EQ(r.chat.max_tokens, 32000u);

  // Rendered through the one renderer: the mid-conversation system message joins the system
  // prompt, the billing header does not appear, the tool result is a <tool_result>.
  RenderResult out = render_chat(r.chat, nullptr, ContractMode::Off, {});
  size_t first_user = out.text.find("<｜User｜>");
  ASSERT_NE(first_user, std::string::npos);
  EXPECT_LT(out.text.find("Reminder: keep answers short."), first_user);
  EXPECT_EQ(out.text.find("x-anthropic-billing-header"), std::string::npos);
  EXPECT_NE(out.text.find("<tool_result>a.txt\nb.txt</tool_result>"), std::string::npos);
  EXPECT_TRUE(out.text.ends_with("<｜Assistant｜><think>"));
}

TEST(AnthropicRequest, ChoicesThinkingAndErrorsNameTheField) {
  auto parse = [](const std::string& extra) {
    return parse_anthropic_request(
        json::parse(R"({"max_tokens":10,"messages":[{"role":"user","content":"hi"}])" + extra + "}"));
  };
  EXPECT_EQ(parse(R"(,"tool_choice":{"type":"any"})").chat.tool_choice, "required");
  EXPECT_EQ(parse(R"(,"tool_choice":{"type":"tool","name":"Read"})").chat.tool_choice, "function:Read");
  EXPECT_EQ(parse(R"(,"tool_choice":{"type":"none"})").chat.tool_choice, "none");
  EXPECT_EQ(parse(R"(,"thinking":{"type":"disabled"})").chat.thinking, Thinking::Off);
  EXPECT_EQ(parse(R"(,"thinking":{"type":"enabled","budget_tokens":2048})").chat.thinking, Thinking::High);
  EXPECT_EQ(parse(R"(,"output_config":{"effort":"max"})").chat.thinking, Thinking::Max);
  EXPECT_EQ(parse(R"(,"stop_sequences":["END",""])").chat.stop, std::vector<std::string>{"END"});
  auto param_of = [&](const std::string& extra) {
    try {
      parse(extra);
    } catch (const RequestError& e) {
      return e.param;
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(param_of(R"(,"tool_choice":{"type":"sometimes"})"), "tool_choice.type");
  EXPECT_EQ(param_of(R"(,"tool_choice":{"type":"tool"})"), "tool_choice.name");
  EXPECT_EQ(param_of(R"(,"thinking":{"type":"maybe"})"), "thinking.type");
  EXPECT_EQ(param_of(R"(,"temperature":"hot")"), "temperature");
  EXPECT_EQ(param_of(R"(,"tools":[{"input_schema":{}}])"), "tools[0].name");
  try {
    parse_anthropic_request(
        json::parse(R"({"messages":[{"role":"user","content":[{"type":"tool_use","id":"x","name":"n"}]}]})"));
    FAIL() << "a user tool_use was accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.param, "messages[0].content[0].type");
  }
}

// Claude Code's ToolSearch: deferred tools stay out of the prompt until a tool_result's
// tool_reference names one; the schema then appears inside that result, the tool becomes
// callable, and the prompt up to that result renders exactly as it did without the reference.
TEST(AnthropicRequest, ToolReferenceLoadsADeferredToolAndKeepsThePrefix) {
  const std::string tools =
      R"("tools":[{"name":"ToolSearch","description":"Find deferred tools.","input_schema":{"type":"object",)"
      R"("properties":{"query":{"type":"string"}}}},)"
      R"({"name":"WebFetch","description":"Fetch a URL.","input_schema":{"type":"object",)"
      R"("properties":{"url":{"type":"string"}}},"defer_loading":true},)"
      R"({"name":"NotebookEdit","description":"Edit a notebook.","input_schema":{"type":"object"},)"
      R"("defer_loading":true}])";
  const std::string turn1 = R"({"role":"user","content":"Fetch example.com"},)"
                            R"({"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ToolSearch",)"
                            R"("input":{"query":"select:WebFetch"}}]})";
  const std::string result = R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[)"
                             R"({"type":"text","text":"Found:"},{"type":"tool_reference","tool_name":"WebFetch"}]}]})";
  auto parse = [&](const std::string& messages) {
    return parse_anthropic_request(json::parse("{" + tools + R"(,"messages":[)" + messages + "]}"));
  };

  // The same turn with a plain-text result: what the prompt was before any tool was loaded.
  AnthropicRequest before = parse(turn1 + "," +
                                  R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1",)"
                                  R"("content":"Found:"}]})");
  ASSERT_EQ(before.chat.tools.size(), 1u);  // the deferred two are not in the tools block
  EXPECT_EQ(before.chat.tools[0].at("name").as_string(), "ToolSearch");
  EXPECT_TRUE(before.chat.loaded_tools.empty());
  std::string before_text = render_chat(before.chat, nullptr, ContractMode::Off, {}).text;
  EXPECT_EQ(before_text.find("Fetch a URL."), std::string::npos);
  EXPECT_EQ(before_text.find("NotebookEdit"), std::string::npos);

  AnthropicRequest after = parse(turn1 + "," + result);
  ASSERT_EQ(after.chat.loaded_tools.size(), 1u);
  EXPECT_EQ(after.chat.loaded_tools[0].at("name").as_string(), "WebFetch");
  ASSERT_EQ(after.chat.callable_tools().size(), 2u);
  EXPECT_EQ(after.chat.callable_tools()[1].at("name").as_string(), "WebFetch");
  const Message& tool = after.chat.messages.back();
  ASSERT_EQ(tool.role, Role::Tool);
  EXPECT_EQ(tool.content,
            "Found:\n\n<functions>\n<function>{\"name\":\"WebFetch\",\"description\":\"Fetch a URL.\","
            "\"parameters\":{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"}}}}</function>\n"
            "</functions>");
  std::string after_text = render_chat(after.chat, nullptr, ContractMode::Off, {}).text;
  size_t result_at = after_text.find("<tool_result>");
  ASSERT_NE(result_at, std::string::npos);
  EXPECT_EQ(after_text.substr(0, result_at), before_text.substr(0, result_at));
  EXPECT_EQ(after_text.find("NotebookEdit"), std::string::npos);

  // Two references in a row share one <functions> block; a name loaded twice is listed once.
  AnthropicRequest twice = parse(turn1 + "," +
                                 R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[)"
                                 R"({"type":"tool_reference","tool_name":"WebFetch"},)"
                                 R"({"type":"tool_reference","tool_name":"NotebookEdit"},)"
                                 R"({"type":"tool_reference","tool_name":"WebFetch"}]}]})");
  EXPECT_EQ(twice.chat.loaded_tools.size(), 2u);
  const std::string& c = twice.chat.messages.back().content;
  EXPECT_TRUE(c.starts_with("<functions>\n<function>{\"name\":\"WebFetch\"")) << c;
  EXPECT_EQ(c.find("<functions>", 1), std::string::npos) << c;
  EXPECT_TRUE(c.ends_with("</function>\n</functions>")) << c;

  try {
    parse(turn1 + "," +
          R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[)"
          R"({"type":"text","text":"x"},{"type":"tool_reference","tool_name":"Nope"}]}]})");
    FAIL() << "a reference to an unknown tool was accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.param, "messages[2].content[0].content[1].tool_name");
    EXPECT_NE(std::string(e.what()).find("'Nope'"), std::string::npos) << e.what();
  }
}

TEST(ResponsesRequest, CodexShapedRequestMapsOntoTheChatConversation) {
  ResponsesRequest r = parse_responses_request(fixture("codex_responses.json"));
  const auto& m = r.chat.messages;
  ASSERT_EQ(m.size(), 6u);
  EXPECT_TRUE(r.has_instructions);
  EXPECT_EQ(m[0].role, Role::System);
  EXPECT_EQ(m[1].role, Role::Developer);
  EXPECT_EQ(m[2].role, Role::Developer);
  EXPECT_EQ(m[3].role, Role::User);
  EXPECT_EQ(m[3].content, "Run the tests.");
  EXPECT_EQ(m[4].role, Role::Assistant);
  EXPECT_EQ(m[4].reasoning, "Need to run tests.");  // from encrypted_content, exact
  ASSERT_EQ(m[4].tool_calls.size(), 1u);
  EXPECT_EQ(m[4].tool_calls[0].id, "call_fedcba9876543210fedcba9876543210");
  EXPECT_EQ(m[4].tool_calls[0].arguments, R"({"command":"make test"})");
  EXPECT_EQ(m[5].role, Role::Tool);
  EXPECT_EQ(m[5].content, "ok");
  EXPECT_EQ(r.message_paths[0], "instructions");
  EXPECT_EQ(r.message_paths[4], "input[4]");  // the assistant message starts at its first call
  EXPECT_EQ(r.ignored_items, std::vector<std::string>{"web_search_call"});
  EXPECT_EQ(r.ignored_tools, (std::vector<std::string>{"namespace:mcp__files", "web_search"}));
  ASSERT_EQ(r.chat.tools.size(), 2u);
  EXPECT_EQ(r.chat.tools[1].at("name").as_string(), "apply_patch");
  EXPECT_EQ(r.chat.thinking, Thinking::High);
  EXPECT_TRUE(r.reasoning_summary);
  EXPECT_TRUE(r.chat.stream);
  EXPECT_FALSE(r.previous_response_id);
  EXPECT_EQ(r.chat.session_hint, "019a8d0c-1111-7222-8333-944455556666");  // prompt_cache_key
}

// The session hint: prompt_cache_key, else client_metadata.session_id; chat completions read
// prompt_cache_key too. A key of the wrong type is a 400 naming it.
TEST(ResponsesRequest, SessionHintComesFromPromptCacheKeyElseClientMetadata) {
  auto parse = [](const std::string& body) { return parse_responses_request(json::parse(body)); };
  EXPECT_EQ(parse(R"({"input":"hi","prompt_cache_key":"k1","client_metadata":{"session_id":"s1"}})").chat.session_hint,
            "k1");
  EXPECT_EQ(parse(R"({"input":"hi","client_metadata":{"session_id":"s1"}})").chat.session_hint, "s1");
  EXPECT_EQ(parse(R"({"input":"hi"})").chat.session_hint, "");
  try {
    parse(R"({"input":"hi","prompt_cache_key":7})");
    ADD_FAILURE() << "no error";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.param, "prompt_cache_key");
  }
  EXPECT_EQ(parse_chat_request(json::parse(R"({"messages":[{"role":"user","content":"x"}],"prompt_cache_key":"c"})"))
                .session_hint,
            "c");
}

TEST(ResponsesRequest, ItemRulesAndErrors) {
  auto parse = [](const std::string& body) { return parse_responses_request(json::parse(body)); };
  // A string input is one user message; consecutive calls share one assistant message; a
  // trailing reasoning item becomes an empty assistant message.
  EXPECT_EQ(parse(R"({"input":"hi"})").chat.messages.at(0).content, "hi");
  auto r = parse(R"({"input":[{"role":"user","content":"q"},
        {"type":"function_call","call_id":"a","name":"f","arguments":"{}"},
        {"type":"function_call","call_id":"b","name":"g","arguments":{"x":1}},
        {"type":"function_call_output","call_id":"a","output":[{"type":"input_text","text":"1"}]},
        {"type":"reasoning","summary":[{"type":"summary_text","text":"plain summary"}]}],
        "tool_choice":{"type":"function","name":"f"},"reasoning":{"effort":"none"},"max_output_tokens":7})");
  ASSERT_EQ(r.chat.messages.size(), 4u);
  EXPECT_EQ(r.chat.messages[1].tool_calls.size(), 2u);
  EXPECT_EQ(r.chat.messages[1].tool_calls[1].arguments, R"({"x":1})");
  EXPECT_EQ(r.chat.messages[2].content, "1");
  EXPECT_EQ(r.chat.messages[3].role, Role::Assistant);
  EXPECT_EQ(r.chat.messages[3].reasoning, "plain summary");
  EXPECT_EQ(r.chat.tool_choice, "function:f");
  EXPECT_EQ(r.chat.thinking, Thinking::Off);
  EXPECT_EQ(r.chat.max_tokens, 7u);
  auto param_of = [&](const std::string& body) {
    try {
      parse(body);
    } catch (const RequestError& e) {
      return e.param;
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(param_of(R"({})"), "input");
  EXPECT_EQ(param_of(R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]})"),
            "input[0].content[0].type");
  EXPECT_EQ(param_of(R"({"input":[{"type":"function_call","name":"f"}]})"), "input[0].call_id");
  EXPECT_EQ(param_of(R"({"input":"x","tool_choice":"sometimes"})"), "tool_choice");
  EXPECT_EQ(param_of(R"({"input":"x","reasoning":{"effort":"extreme"}})"), "reasoning.effort");
  EXPECT_EQ(param_of(R"({"input":"x","previous_response_id":"resp_1"})"), "(accepted)");
}

TEST(ReasoningToken, RoundTripsAnyBytesAndRejectsForeignTokens) {
  for (std::string s : {std::string(), std::string("a"), std::string("ab"), std::string("abc"), std::string("abcd"),
                        std::string("\0\xff\x80 think </think> \xe4\xb8\xad", 16)}) {
    std::string token = encode_reasoning_token(s);
    EXPECT_EQ(token.rfind("ds4d.r1.", 0), 0u);
    EXPECT_EQ(decode_reasoning_token(token), s);
  }
  EXPECT_EQ(decode_reasoning_token("gAAAAABo-openai-ciphertext"), std::nullopt);
  EXPECT_EQ(decode_reasoning_token("ds4d.r1.abc"), std::nullopt);   // not a multiple of 4
  EXPECT_EQ(decode_reasoning_token("ds4d.r1.ab=c"), std::nullopt);  // padding in the middle
  EXPECT_EQ(decode_reasoning_token("ds4d.r1.a*cd"), std::nullopt);  // not base64
}

}  // namespace
}  // namespace ds4::protocol

namespace ds4::protocol {
namespace {

// ds4d's "speculation": false reaches the sampling settings from all four request shapes, and a
// value that is not a boolean is an error naming the field (docs/speculation.md §configuration).
TEST(SpeculationField, EveryApiReadsTheOptOut) {
  const auto p = [](std::string_view s) { return boost::json::parse(s); };
  EXPECT_EQ(
      parse_chat_request(p(R"({"messages":[{"role":"user","content":"x"}],"speculation":false})")).sampling.speculation,
      std::optional<bool>(false));
  EXPECT_FALSE(parse_chat_request(p(R"({"messages":[{"role":"user","content":"x"}]})")).sampling.speculation);
  EXPECT_EQ(parse_completion_request(p(R"({"prompt":"x","speculation":false})")).sampling.speculation,
            std::optional<bool>(false));
  EXPECT_EQ(parse_anthropic_request(
                p(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"speculation":false})"))
                .chat.sampling.speculation,
            std::optional<bool>(false));
  EXPECT_EQ(parse_responses_request(p(R"({"input":"x","speculation":false})")).chat.sampling.speculation,
            std::optional<bool>(false));
  try {
    parse_chat_request(p(R"({"messages":[{"role":"user","content":"x"}],"speculation":"no"})"));
    ADD_FAILURE() << "accepted a string";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.param, "speculation");
  }
}

}  // namespace
}  // namespace ds4::protocol
