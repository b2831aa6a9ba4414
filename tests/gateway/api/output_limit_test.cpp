// A request that sets no output limit runs to the end of the context; that end is a normal end
// in each API (chat "stop", Anthropic "end_turn", Responses "completed"), not the length stop a
// client reads as a limit it asked for (Codex CLI failed turns with "Incomplete response
// returned, reason: max_output_tokens" without sending max_output_tokens). A limit the client
// set is still reported as length, also when the context ends first.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

json::value post(Harness& h, const std::string& path, const std::string& body) {
  auto c = h.client();
  auto r = c.request(verb::post, path, body);
  EXPECT_EQ(r.result_int(), 200) << path << " " << r.body();
  return json::parse(r.body());
}

TEST(GatewayOutputLimit, TheEndOfTheContextIsANormalEndWhenTheClientSetNoLimit) {
  Harness h;
  h.backend->endless = true;  // never ends by itself: runs to the end of the 4096-token context
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  // Chat completions.
  json::value chat = post(h, "/v1/chat/completions", "{" + msgs + R"(,"thinking":false})");
  EXPECT_EQ(chat.at("choices").at(0).at("finish_reason").as_string(), "stop");
  EXPECT_GT(chat.at("usage").at("completion_tokens").as_int64(), 1000);  // it did run to the end
  EXPECT_EQ(post(h, "/v1/chat/completions", "{" + msgs + R"(,"thinking":false,"max_tokens":5})")
                .at("choices")
                .at(0)
                .at("finish_reason")
                .as_string(),
            "length");
  // A limit larger than the room left: the context ends first, and the client asked for a limit.
  EXPECT_EQ(post(h, "/v1/chat/completions", "{" + msgs + R"(,"thinking":false,"max_tokens":100000})")
                .at("choices")
                .at(0)
                .at("finish_reason")
                .as_string(),
            "length");
  // Anthropic Messages.
  const std::string off = R"("thinking":{"type":"disabled"})";
  EXPECT_EQ(post(h, "/v1/messages", "{" + msgs + "," + off + "}").at("stop_reason").as_string(), "end_turn");
  EXPECT_EQ(post(h, "/v1/messages", "{" + msgs + "," + off + R"(,"max_tokens":5})").at("stop_reason").as_string(),
            "max_tokens");
  // Responses.
  const std::string input = R"("input":"hi","reasoning":{"effort":"none"})";
  json::value resp = post(h, "/v1/responses", "{" + input + "}");
  EXPECT_EQ(resp.at("status").as_string(), "completed");
  EXPECT_TRUE(resp.at("incomplete_details").is_null());
  json::value cut = post(h, "/v1/responses", "{" + input + R"(,"max_output_tokens":5})");
  EXPECT_EQ(cut.at("status").as_string(), "incomplete");
  EXPECT_EQ(cut.at("incomplete_details").at("reason").as_string(), "max_output_tokens");
  // Completions.
  EXPECT_EQ(post(h, "/v1/completions", R"({"prompt":"hi"})").at("choices").at(0).at("finish_reason").as_string(),
            "stop");
}

}  // namespace
}  // namespace ds4::test
