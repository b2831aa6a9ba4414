#pragma once
// PolicyCheck: a job's TokenPolicy as a check on tokens someone else sampled
// (docs/scale-out.md §vllm-and-sglang).
//
// vLLM and SGLang cannot run ds4d's token policies (DSML-safe sampling with tool_choice, the
// no-tools policy, response_format JSON constraints), so the gateway replays what they sampled
// through the same policy object, token by token, and stops at the first token the policy would
// not have allowed had the model preferred it: a token the policy refuses, one outside what it
// admits where it restricts, one other than a token it forces (a tool-call opening, a declared
// name), an end of generation where it may not end. What passes is output a local ds4d could have
// produced; what does not ends the job with a clear error instead of reaching the client wrong.
#include <optional>
#include <string>
#include <vector>

#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"

namespace ds4::serving {
class TokenPolicy;
}

namespace ds4::upstream {

class PolicyCheck {
 public:
  // `policy` may be null (every token passes). Both must outlive the check.
  PolicyCheck(serving::TokenPolicy* policy, const serving::EngineBackend& backend);

  // The next sampled token (an end of generation included): nullopt when the policy allows it
  // (and it is then accepted into the policy's state), else why not.
  std::optional<std::string> next(serving::Token token);
  // The generation ended without an end-of-generation token (the engine's finish "stop"):
  // nullopt when the policy may end here, else why not.
  std::optional<std::string> end();

 private:
  // The token the policy takes whatever the model wants (a forced or structural step), if any.
  std::optional<serving::Token> forced_here();

  serving::TokenPolicy* policy_;
  const serving::EngineBackend& backend_;
  std::vector<float> one_hot_;  // the logits of a model that wants only the sampled token
  std::vector<float> flat_;     // the logits of a model that wants nothing in particular
};

}  // namespace ds4::upstream
