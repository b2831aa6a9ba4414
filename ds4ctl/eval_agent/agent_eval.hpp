#pragma once
// Agent-quality evaluation of a DS4 model by this engine: each case is an OpenAI-shaped chat
// request (rendered with the gateway's own renderer) plus what a good reply contains. The reply is
// generated greedily by the serving worker's own decode step (gateway/serving/turn_decoder.hpp;
// by default under the server's token rules, see Decoding), parsed with the gateway's DSML output
// parser and scored as call, answer or plain, separately for seen and held-out tool schemas. The
// scores and the case format: docs/toolchain.md §agent-evaluation.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/sampler/sampler.hpp"
#include "gateway/protocol/parsed_message.hpp"
#include "gateway/serving/drafter.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/speculator.hpp"

namespace ds4::agent_eval {

struct Case {
  std::string kind;  // call, answer, plain
  bool heldout = false;
  std::string request_json;
  std::string expect_json;
  std::vector<int32_t> python_ids;  // empty when absent
};

// Throws std::runtime_error naming the file and line on a malformed case.
std::vector<Case> load_cases(const std::filesystem::path& jsonl);

struct CaseResult {
  bool pass = false;
  bool ids_match = true;  // Python and C++ tokenization agree (true when no Python ids given)
  std::string prompt;     // rendered prompt text
  std::string output;     // generated text (reasoning and content as sampled)
  std::string detail;     // why it failed, or the parsed call
};

struct Score {
  size_t n = 0, pass = 0;
  double rate() const { return n ? double(pass) / double(n) : 0.0; }
};

struct Report {
  Score call[2], answer[2], plain[2];  // [0] seen schemas, [1] held-out schemas
  Score well_formed[2];                // call cases whose reply is a complete, parseable DSML tool-call block
  size_t ids_mismatch = 0;
  size_t generated_tokens = 0;
  size_t weighing_decodes = 0;             // decodes spent weighing names (served decoding), beyond generated_tokens
  serving::SpeculationCounts speculation;  // drafts proposed and accepted (with a drafter)
  std::vector<CaseResult> results;
};

// Exact speculative decoding during the evaluation (docs/speculation.md): the replies are the same
// with or without it; what it measures is the drafter's acceptance on the cases.
struct Speculation {
  serving::Drafter* drafter = nullptr;  // null: none
  size_t k = 0;
};

// Served: greedy under the server's token rules for requests with tools (DSML structure greedy,
// calls only to declared tools and their parameters, a choice among several names weighed whole
// by the model (a tool name with its call's opening), no end inside a tool-call block:
// gateway/serving/dsml_token_policy.hpp, token_choice.hpp), so the scores are what a client gets. Free: plain greedy,
// the model alone.
enum class Decoding { Served, Free };

// Runs every case on `backend` greedily, at most `max_new_tokens` per case.
Report evaluate(const std::shared_ptr<serving::Ds4Backend>& backend, const std::vector<Case>& cases,
                size_t max_new_tokens = 160, Decoding decoding = Decoding::Served, Speculation speculation = {});

// One reply as evaluate() generates it.
struct Reply {
  std::string prompt;               // the request rendered by the gateway's renderer
  std::vector<int32_t> prompt_ids;  // and tokenized as the server tokenizes it
  std::vector<int32_t> tokens;      // the tokens chosen, an end of generation excluded
  size_t chosen = 0;                // decode steps taken (an end of generation included)
  size_t weighing_decodes = 0;      // decodes spent weighing names, beyond `chosen`
  serving::SpeculationCounts speculation;
  std::string output;               // the tokens' text
  protocol::ParsedMessage message;  // the output parsed as the gateway parses it
};

// `request_json` (an OpenAI chat request) rendered, prefilled on `seq` and decoded by the
// worker's decode step with `sampling` (evaluate(): greedy), under the token rules the server
// sets up for it (none when Free), for at most `max_new_tokens`, ending where a tool-call block
// closes as the chat endpoint does.
Reply generate_reply(const std::shared_ptr<serving::Ds4Backend>& backend, serving::EngineSequence& seq,
                     const std::string& request_json, size_t max_new_tokens, Decoding decoding,
                     const sampler::SamplerConfig& sampling, Speculation speculation = {});

}  // namespace ds4::agent_eval
