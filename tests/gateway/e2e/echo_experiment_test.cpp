// The echo experiment (issue 12 item 7): one multi-turn tool conversation through the real
// gateway, replayed by a client in three echo modes ((a) canonical re-serialization, (b) exact
// ids without reasoning, (c) as contracted, and c+restart), in warn and strict contract mode,
// printing per turn cached/total prompt tokens and prefill time. It runs on the embedded trained
// agent model, which samples its own turns, and on the forged tiny model with the assistant's
// tokens injected through ForcedBackend. scripts/echo-experiment.sh runs it and prints the table.
// The modes, the models and a run: docs/prefix-cache.md §the-echo-experiment.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include "gateway/api/api_server.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "tests/gateway/http_test_client.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using bhttp::verb;

std::string tiny_model_path() {
  if (const char* p = std::getenv("DS4D_TINY_MODEL")) return p;
  return DS4D_FORGED_TINY_MODEL;
}

std::string agent_model_path() {
  if (const char* p = std::getenv("DS4D_AGENT_MODEL")) return p;
  return DS4D_AGENT_MODEL;
}

// The real engine with a scripted choice of tokens (see above).
class ForcedBackend final : public serving::EngineBackend {
 public:
  explicit ForcedBackend(std::shared_ptr<serving::Ds4Backend> inner) : inner_(std::move(inner)) {}
  void force(const std::string& reply) { reply_ = inner_->encode(reply); }

  std::string model_id() const override { return inner_->model_id(); }
  size_t context_length() const override { return inner_->context_length(); }
  size_t vocab_size() const override { return inner_->vocab_size(); }
  std::vector<serving::Token> encode(std::string_view t) const override { return inner_->encode(t); }
  std::vector<serving::Token> encode_plain(std::string_view t) const override { return inner_->encode_plain(t); }
  std::vector<serving::Token> encode_prompt(std::string_view t,
                                            std::span<const std::pair<size_t, size_t>> plain) const override {
    return inner_->encode_prompt(t, plain);
  }
  std::string decode(std::span<const serving::Token> t) const override { return inner_->decode(t); }
  std::string token_bytes(serving::Token t) const override { return inner_->token_bytes(t); }
  bool is_end_of_generation(serving::Token t) const override { return inner_->is_end_of_generation(t); }
  uint64_t fingerprint() const override { return inner_->fingerprint(); }
  std::unique_ptr<serving::EngineSequence> new_sequence() override;

 private:
  friend class ForcedSequence;
  std::shared_ptr<serving::Ds4Backend> inner_;
  std::vector<serving::Token> reply_;
};

class ForcedSequence final : public serving::EngineSequence {
 public:
  ForcedSequence(ForcedBackend& b, std::unique_ptr<serving::EngineSequence> real)
      : b_(b), real_(std::move(real)), logits_(b.vocab_size(), 0.0f) {}
  const std::vector<serving::Token>& tokens() const override { return real_->tokens(); }
  size_t capacity() const override { return real_->capacity(); }
  void clear() override { real_->clear(), k_ = 0; }
  void append(std::span<const serving::Token> t) override {
    real_->append(t);
    if (t.size() == 1 && k_ < b_.reply_.size() && t[0] == b_.reply_[k_]) k_++;
    else k_ = 0;
  }
  std::span<const float> logits() const override {
    std::fill(logits_.begin(), logits_.end(), 0.0f);
    const serving::Token eos = b_.inner_->tokenizer().eos();
    logits_[size_t(k_ < b_.reply_.size() ? b_.reply_[k_] : eos)] = 100.0f;
    return logits_;
  }
  size_t truncate_floor() const override { return real_->truncate_floor(); }
  void truncate(size_t n) override { real_->truncate(n), k_ = 0; }
  std::vector<uint8_t> snapshot() const override { return real_->snapshot(); }
  void restore(std::span<const uint8_t> s) override { real_->restore(s), k_ = 0; }

 private:
  ForcedBackend& b_;
  std::unique_ptr<serving::EngineSequence> real_;
  size_t k_ = 0;
  mutable std::vector<float> logits_;
};

std::unique_ptr<serving::EngineSequence> ForcedBackend::new_sequence() {
  return std::make_unique<ForcedSequence>(*this, inner_->new_sequence());
}

// The conversation: what the user says and what the assistant "samples" each turn.
const char* kTools = R"([{"type":"function","function":{"name":"shell","parameters":{"type":"object",
  "properties":{"command":{"type":"string"}}}}}])";
// A turn answers the previous turn's tool calls when it made some (each gets kToolResult),
// otherwise the next user message of the script.
struct Turn {
  std::string user;         // empty: this turn answers the previous tool call's result
  std::string tool_result;  // for the tool message before this turn
  std::string reply;        // forced model: sampled reasoning</think>content[DSML]
};
const char* kToolResult = "a.txt 120 bytes\nb.txt 4096 bytes\ndone";
const std::vector<Turn> kTurns = {
    {"List the files in /tmp and count them, then tell me which one is the largest of them all.", "",
     "The user wants a listing; a shell call does it.</think>Listing the directory."
     "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"shell\">\n"
     "<｜DSML｜parameter name=\"command\" string=\"true\">ls  -la /tmp &amp;&amp; echo done</｜DSML｜parameter>\n"
     "</｜DSML｜invoke>\n</｜DSML｜tool_calls>"},
    {"", kToolResult, "Two files; b.txt is larger.</think>There are two files; b.txt (4096 bytes) is the largest."},
    {"Thanks. Summarize that in five words.", "", "Short answer.</think>Two files, b.txt is largest."},
};

struct Row {
  std::string model, mode, contracts;
  int turn = 0;
  int status = 0;
  int64_t cached = 0, prompt = 0;
  double prefill_s = 0;
  std::string source;
};

class EchoExperiment : public ::testing::Test {
 protected:
  static std::shared_ptr<serving::Ds4Backend> load(const std::string& path) {
    LoadOptions load;
    load.threads = 2;
    ContextOptions ctx;
    ctx.context_length = 2048;
    return serving::Ds4Backend::load(path, load, ctx);
  }
  static void SetUpTestSuite() {
    ASSERT_TRUE(fs::exists(tiny_model_path())) << tiny_model_path();
    inner_ = load(tiny_model_path());
  }
  static void TearDownTestSuite() {
    print_table();
    inner_.reset();
  }

  // The model a play runs on: the forged one with injected replies, or one that samples itself.
  struct Model {
    std::string name;
    std::shared_ptr<serving::Ds4Backend> engine;
    bool forced = true;
  };

  struct Daemon {
    serving::Metrics metrics;
    std::unique_ptr<serving::Service> service;
    std::unique_ptr<http::Server> server;
    std::shared_ptr<ForcedBackend> backend;  // null: the model samples its own turns
    Daemon(const std::string& contracts, const fs::path& dir, const Model& model) {
      if (model.forced) backend = std::make_shared<ForcedBackend>(model.engine);
      serving::ServiceConfig sc;
      sc.hot_bytes = 64 << 20;
      sc.cache_dir = dir;
      sc.disk_bytes = 256 << 20;
      sc.checkpoint_min_tokens = 1;
      service = std::make_unique<serving::Service>(sc, metrics);
      http::ServerConfig hc;
      hc.port = 0;
      hc.contract_mode = contracts;
      server = http::make_api_server(hc, *service, metrics);
      server->start();
      if (backend) service->set_backend(backend);
      else service->set_backend(model.engine);
    }
    ~Daemon() {
      server->stop(std::chrono::milliseconds(0));
      service->stop(std::chrono::milliseconds(0));
    }
  };

  static std::string random_id() {
    static std::mt19937_64 rng(99);
    return fmt::format("call_{:016x}{:016x}", rng(), rng());
  }

  // Plays the conversation; `mode` is a, b, c. Returns the rows.
  static std::vector<Row> play(char mode, const std::string& contracts, bool restart, const Model& model) {
    const fs::path dir = fs::temp_directory_path() /
                         fmt::format("ds4d-echo-{}-{}{}{}{}", ::getpid(), mode, contracts, restart, model.forced);
    fs::remove_all(dir);
    std::vector<Row> rows;
    auto daemon = std::make_unique<Daemon>(contracts, dir, model);
    json::array messages;
    std::vector<std::string> pending_tool_ids;
    size_t next_user = 0;
    std::vector<std::string> users;
    for (const Turn& t : kTurns)
      if (!t.user.empty()) users.push_back(t.user);
    for (size_t i = 0; i < kTurns.size(); i++) {
      if (!pending_tool_ids.empty()) {
        for (const std::string& id : pending_tool_ids)
          messages.push_back(json::object{{"role", "tool"}, {"tool_call_id", id}, {"content", kToolResult}});
        pending_tool_ids.clear();
      } else {
        messages.push_back(json::object{{"role", "user"}, {"content", users.at(next_user++ % users.size())}});
      }
      if (restart && i > 0) {
        daemon.reset();  // SIGTERM: drain, write the shutdown checkpoints
        daemon = std::make_unique<Daemon>(contracts, dir, model);
      }
      if (daemon->backend) daemon->backend->force(kTurns[i].reply);
      json::object body{{"model", "tiny"},
                        {"messages", messages},
                        {"tools", json::parse(kTools)},
                        {"max_tokens", 200},
                        {"temperature", 0},
                        // Thinking chats sample with the reference defaults whatever the
                        // temperature; a fixed seed makes the agent model's replies (and so the
                        // table) the same every run.
                        {"seed", 20261201}};
      const double prefill_before = prefill_seconds(daemon->metrics);
      HttpTestClient c(daemon->server->port());
      auto r = c.request(verb::post, "/v1/chat/completions", json::serialize(body));
      Row row;
      row.model = model.name;
      row.mode = std::string(1, mode) + (restart ? "+restart" : "");
      row.contracts = contracts;
      row.turn = int(i + 1);
      row.status = int(r.result_int());
      if (r.result_int() != 200) {
        rows.push_back(row);
        break;  // strict refused: the client would have to fix its echo first
      }
      auto v = json::parse(r.body());
      row.prompt = v.at("usage").at("prompt_tokens").as_int64();
      row.cached = v.at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64();
      row.source = std::string(v.at("ds4d").at("cache").at("source").as_string());
      row.prefill_s = prefill_seconds(daemon->metrics) - prefill_before;
      rows.push_back(row);
      // The client's echo of the assistant turn.
      auto& msg = v.at("choices").at(0).at("message").as_object();
      json::object echo{{"role", "assistant"}, {"content", msg.at("content")}};
      if (mode == 'c' && msg.if_contains("reasoning_content")) echo["reasoning_content"] = msg.at("reasoning_content");
      if (mode == 'b') echo["reasoning_content"] = "";
      if (auto* calls = msg.if_contains("tool_calls")) {
        json::array out;
        for (auto& call : calls->as_array()) {
          json::object cc = call.as_object();
          if (mode == 'a') {
            cc["id"] = random_id();
            auto& fn = cc["function"].as_object();
            // Canonical JSON where the model's arguments parse (a small model's may not; a
            // client has nothing to re-serialize then and sends them back as they came).
            boost::system::error_code ec;
            auto parsed = json::parse(fn["arguments"].as_string(), ec);
            if (!ec) fn["arguments"] = json::serialize(parsed);
          }
          pending_tool_ids.push_back(std::string(cc["id"].as_string()));
          out.push_back(cc);
        }
        echo["tool_calls"] = out;
      }
      messages.push_back(echo);
    }
    daemon.reset();
    fs::remove_all(dir);
    return rows;
  }

  static std::vector<Row> play_rows(char mode, const std::string& contracts, bool restart, const Model& model) {
    return play(mode, contracts, restart, model);
  }

  static double prefill_seconds(const serving::Metrics& m) {
    const std::string text = m.render();
    const std::string key = "\nds4d_prefill_seconds_total ";
    const size_t p = text.find(key);
    return p == std::string::npos ? 0 : std::stod(text.substr(p + key.size()));
  }

  static void print_table() {
    std::printf(
        "\n| model | contracts | client echo | turn | status | cached / prompt tokens | source | prefill s |\n"
        "|---|---|---|---|---|---|---|---|\n");
    for (const Row& r : all_rows_)
      std::printf("| %s | %s | %s | %d | %d | %lld / %lld | %s | %.3f |\n", r.model.c_str(), r.contracts.c_str(),
                  r.mode.c_str(), r.turn, r.status, (long long)r.cached, (long long)r.prompt, r.source.c_str(),
                  r.prefill_s);
  }

  static inline std::shared_ptr<serving::Ds4Backend> inner_;
  static inline std::vector<Row> all_rows_;
  friend void check_echo_modes(const Model& model, std::vector<Row>& all);
};

// The checks common to both models: a broken echo is refused in strict mode; a contracted echo
// (c, and b, whose empty reasoning the store repairs in warn mode) reuses every token of the
// previous prompt, also from disk after a restart between turns.
void check_echo_modes(const EchoExperiment::Model& model, std::vector<Row>& all) {
  for (const char* contracts : {"warn", "strict"}) {
    std::map<char, std::vector<Row>> by_mode;
    for (char mode : {'a', 'b', 'c'}) {
      auto rows = EchoExperiment::play_rows(mode, contracts, false, model);
      all.insert(all.end(), rows.begin(), rows.end());
      by_mode[mode] = rows;
      if (std::string(contracts) == "strict" && mode != 'c') {
        EXPECT_EQ(rows.back().status, 422) << model.name << " " << mode;  // refused, naming the contract
        continue;
      }
      ASSERT_EQ(rows.size(), kTurns.size()) << model.name << " " << mode << " " << contracts;
      if (mode != 'a') {  // everything but the new message (and the frame around it) is reused
        for (size_t i = 1; i < rows.size(); i++)
          EXPECT_GE(rows[i].cached, rows[i - 1].prompt) << model.name << " " << mode << " turn " << i + 1;
      }
    }
    // Re-serialized tool calls diverge inside the injected sampled block (the agent model's own
    // arguments may already be canonical, so only the forced script is sure to differ).
    if (model.forced && std::string(contracts) == "warn") {
      EXPECT_LT(by_mode['a'][1].cached, by_mode['c'][1].cached) << model.name;
    }
    auto rows = EchoExperiment::play_rows('c', contracts, true, model);
    all.insert(all.end(), rows.begin(), rows.end());
    ASSERT_EQ(rows.size(), kTurns.size()) << model.name;
    // After a restart the previous turn comes back from its checkpoints: the turn end, or at
    // least the previous prompt's restore point, which sits before the reply's opening.
    const auto margin = int64_t(serving::ServiceConfig{}.prompt_point_margin_tokens);
    for (size_t i = 1; i < rows.size(); i++) {
      EXPECT_EQ(rows[i].source, "disk") << model.name << " turn " << i + 1;
      EXPECT_GE(rows[i].cached, rows[i - 1].prompt - margin) << model.name << " turn " << i + 1;
    }
  }
}

TEST_F(EchoExperiment, AgentModelsOwnToolCallsReuseEverythingButTheNewMessageAlsoAcrossRestarts) {
  ASSERT_TRUE(fs::exists(agent_model_path())) << agent_model_path();
  const Model agent{fs::path(agent_model_path()).filename().string(), load(agent_model_path()), false};
  check_echo_modes(agent, all_rows_);
}

TEST_F(EchoExperiment, ContractedEchoReusesEverythingButTheNewMessageAlsoAcrossRestarts) {
  const Model forged{"forged tiny, injected replies", inner_, true};
  check_echo_modes(forged, all_rows_);
}

}  // namespace
}  // namespace ds4::test
