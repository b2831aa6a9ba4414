// ResponseHistory on disk (gateway/api/response_history.hpp): what previous_response_id needs
// survives a restart (a second history over the same directory), exactly; interrupted writes
// are removed at start and foreign files left alone; a corrupt record is removed and treated as
// unknown; the records stay within their byte bound, oldest first; ids we did not issue never
// reach a path.
#include "gateway/api/response_history.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace ds4::test {
namespace {

namespace fs = std::filesystem;
using protocol::Message;
using protocol::Role;

struct TempDir {
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ds4d-responses-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  const fs::path& path() const { return dir; }
  fs::path dir;
};

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::vector<Message> conversation(const std::string& tag) {
  Message user{Role::User, "Weather in Paris? " + tag, std::nullopt, {}, {}};
  Message assistant{Role::Assistant,
                    "Checking.",
                    std::string("Pondering \"quotes\" and \n newlines."),
                    {{"call_0123", "get_weather", R"({"city":"Paris"})"}},
                    {}};
  Message tool{Role::Tool, "sunny", std::nullopt, {}, "call_0123"};
  Message dev{Role::Developer, "sandbox: none", std::nullopt, {}, {}};
  return {dev, user, assistant, tool};
}

void expect_same(const std::vector<Message>& a, const std::vector<Message>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].role, b[i].role) << i;
    EXPECT_EQ(a[i].content, b[i].content) << i;
    EXPECT_EQ(a[i].reasoning, b[i].reasoning) << i;
    EXPECT_EQ(a[i].tool_call_id, b[i].tool_call_id) << i;
    ASSERT_EQ(a[i].tool_calls.size(), b[i].tool_calls.size()) << i;
    for (size_t j = 0; j < a[i].tool_calls.size(); ++j) {
      EXPECT_EQ(a[i].tool_calls[j].id, b[i].tool_calls[j].id);
      EXPECT_EQ(a[i].tool_calls[j].name, b[i].tool_calls[j].name);
      EXPECT_EQ(a[i].tool_calls[j].arguments, b[i].tool_calls[j].arguments);
    }
  }
}

const std::string kId = "resp_0123456789abcdef01234567";
const std::string kId2 = "resp_0123456789abcdef0123456f";

TEST(ResponseHistoryDisk, ARestartedHistoryFindsTheConversationExactly) {
  TempDir dir;
  const fs::path records = dir.path() / "responses";
  {
    http::ResponseHistory history(1 << 20, records);
    EXPECT_TRUE(history.persistent());
    history.remember(kId, conversation("a"));
  }
  EXPECT_TRUE(fs::exists(records / (kId + ".json")));
  http::ResponseHistory restarted(1 << 20, records);
  auto found = restarted.find(kId);
  ASSERT_TRUE(found);
  expect_same(*found, conversation("a"));
  EXPECT_FALSE(restarted.find(kId2));

  // Memory only: nothing written, nothing found after a "restart".
  http::ResponseHistory memory(1 << 20);
  EXPECT_FALSE(memory.persistent());
  memory.remember(kId2, conversation("b"));
  EXPECT_FALSE(fs::exists(records / (kId2 + ".json")));
}

TEST(ResponseHistoryDisk, StartRemovesInterruptedWritesAndCorruptRecordsAreUnknown) {
  TempDir dir;
  write_file(dir.path() / (".tmp-" + kId + ".json-123"), "{\"ds4d_resp");
  write_file(dir.path() / "notes.txt", "not ours");
  write_file(dir.path() / (kId + ".json"), "{\"ds4d_response_record\":1,\"id\":\"resp_0123");  // cut
  write_file(dir.path() / (kId2 + ".json"),
             http::ResponseHistory::encode_record(kId, conversation("x")));  // another id's record
  http::ResponseHistory history(1 << 20, dir.path());
  EXPECT_FALSE(fs::exists(dir.path() / (".tmp-" + kId + ".json-123")));
  EXPECT_TRUE(fs::exists(dir.path() / "notes.txt"));
  EXPECT_FALSE(history.find(kId));
  EXPECT_FALSE(fs::exists(dir.path() / (kId + ".json")));  // removed, so warned about once
  EXPECT_FALSE(history.find(kId2));
  // A good record under the same id afterwards is found again.
  history.remember(kId, conversation("c"));
  http::ResponseHistory again(1 << 20, dir.path());
  ASSERT_TRUE(again.find(kId));
}

TEST(ResponseHistoryDisk, RecordsStayWithinTheirBoundOldestFirst) {
  TempDir dir;
  const size_t one = http::ResponseHistory::encode_record(kId, conversation("0")).size();
  {
    http::ResponseHistory history(1 << 20, dir.path(), one * 3 + one / 2);  // room for three
    for (int i = 0; i < 5; ++i) {
      std::string id = "resp_0123456789abcdef0123456" + std::to_string(i);
      history.remember(id, conversation(std::to_string(i)));
    }
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) files += e.path().extension() == ".json";
  EXPECT_EQ(files, 3u);
  http::ResponseHistory restarted(1 << 20, dir.path());
  EXPECT_FALSE(restarted.find("resp_0123456789abcdef01234560"));
  EXPECT_FALSE(restarted.find("resp_0123456789abcdef01234561"));
  ASSERT_TRUE(restarted.find("resp_0123456789abcdef01234564"));
}

TEST(ResponseHistoryDisk, IdsWeDidNotIssueNeverReachAPath) {
  TempDir dir;
  http::ResponseHistory history(1 << 20, dir.path() / "r");
  history.remember("../escape", conversation("e"));
  history.remember("resp_XYZ", conversation("e"));
  EXPECT_TRUE(fs::is_empty(dir.path() / "r"));
  EXPECT_FALSE(fs::exists(dir.path() / "escape.json"));
  EXPECT_TRUE(history.find("../escape"));  // still remembered in memory
}

}  // namespace
}  // namespace ds4::test
