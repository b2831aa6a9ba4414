// Session hints over HTTP: X-Claude-Code-Session-Id (/v1/messages) and prompt_cache_key
// (/v1/responses) reach the generation job and route each client session to its own warm
// context. Three agent sessions, interleaved turn by turn, on a warm budget of a couple of
// restore points per session (cache.hot_bytes): with their hints each session keeps its latest
// turn warm and every later turn reuses at least its whole previous prompt; without hints the
// warm store's value order drops some sessions' only restore points and turns miss. Routing is
// still the longest common prefix either way (hot_store.hpp): a hint only decides which restore
// points are kept.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <iostream>
#include <map>

#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

enum class Api { Messages, Responses };

// Turns (after the first) that did not reuse their whole previous prompt.
int play(Api api, bool hints, uint64_t hot_bytes) {
  serving::ServiceConfig scfg;
  scfg.hot_bytes = hot_bytes;
  Harness h({}, scfg, /*load=*/false);
  h.backend->snapshots = true;
  h.service.set_backend(h.backend);
  auto c = h.client();
  std::map<char, json::array> history;
  std::map<char, int64_t> last_prompt;
  int misses = 0;
  for (int round = 0; round < 4; round++) {
    for (char id : {'A', 'B', 'C'}) {
      std::string sys = std::string("You are agent ") + id + ". ";
      for (int i = 0; i < 12; i++) sys += "Rule " + std::to_string(i) + " of agent " + id + ": be exact. ";
      const std::string session = std::string("session-") + id + "-0000-0000";
      history[id].push_back(json::object{{"role", "user"}, {"content", "Step " + std::to_string(round) + "."}});
      json::object body;
      std::vector<std::pair<std::string, std::string>> headers;
      std::string path;
      if (api == Api::Messages) {
        path = "/v1/messages";
        body = json::object{{"max_tokens", 32},
                            {"thinking", json::object{{"type", "disabled"}}},
                            {"system", sys},
                            {"messages", history[id]}};
        if (hints) headers.emplace_back("X-Claude-Code-Session-Id", session);
      } else {
        path = "/v1/responses";
        body = json::object{{"max_output_tokens", 32},
                            {"reasoning", json::object{{"effort", "none"}}},
                            {"store", false},
                            {"instructions", sys},
                            {"input", history[id]}};
        if (hints) body["prompt_cache_key"] = session;
      }
      auto r = c.request(verb::post, path, json::serialize(body), headers);
      EXPECT_EQ(r.result_int(), 200) << r.body();
      if (r.result_int() != 200) return -1;
      auto v = body_json(r);
      const auto& cache = v.at("ds4d").at("cache");
      if (round > 0 && cache.at("cached_tokens").as_int64() < last_prompt[id]) ++misses;
      last_prompt[id] = cache.at("prompt_tokens").as_int64();
      history[id].push_back(json::object{{"role", "assistant"}, {"content", "Hello there"}});
    }
  }
  return misses;
}

void expect_hints_route(Api api) {
  // Budgets from about one to four restore points per session at the last round's sizes.
  bool told_apart = false;
  std::string measured;
  for (uint64_t budget : {8000u, 12000u, 16000u, 20000u, 24000u, 28000u, 32000u, 40000u}) {
    const int with = play(api, true, budget), without = play(api, false, budget);
    measured += " " + std::to_string(budget) + ":" + std::to_string(with) + "/" + std::to_string(without);
    EXPECT_LE(with, without) << budget;
    told_apart = told_apart || (with == 0 && without > 0);
  }
  EXPECT_TRUE(told_apart) << "misses with/without hints per budget:" << measured;
  std::cout << "misses with/without hints per hot_bytes budget:" << measured << "\n";
}

TEST(SessionRouting, ClaudeCodeSessionHeaderKeepsEachSessionWarm) { expect_hints_route(Api::Messages); }
TEST(SessionRouting, ResponsesPromptCacheKeyKeepsEachSessionWarm) { expect_hints_route(Api::Responses); }

}  // namespace
}  // namespace ds4::test
