// Exact speculative decoding over verify + truncate; see speculator.hpp.
#include "gateway/serving/speculator.hpp"

#include <algorithm>

namespace ds4::serving {

Speculator::Speculator(EngineSequence& seq, Drafter* drafter, size_t k, std::span<const Token> prompt)
    : seq_(seq), drafter_(k ? drafter : nullptr), k_max_(k), committed_(seq.tokens().size()), k_now_(k) {
  if (drafter_) history_.assign(prompt.begin(), prompt.end());
}

Token Speculator::choose(TokenPolicy* policy, const EngineBackend& backend, const SampleFn& sample,
                         std::vector<float>& held, std::span<const std::pair<Token, float>> bias,
                         std::vector<float>* seen, size_t* weighing_decodes) {
  if (seq_.tokens().size() > committed_ && policy && policy->alternatives().size() >= 2) {
    // Weighing alternatives appends to the sequence: first take it back to the committed
    // tokens, where the plain loop would be (the logits there come back from the ring).
    seq_.truncate(committed_);
    settle_round();
  }
  if (seq_.tokens().size() == committed_)
    return choose_token(policy, seq_, backend, sample, held, weighing_decodes, bias, seen);
  // The verify's logits at this position, taken as choose_token takes the sequence's own.
  std::span<const float> logits = ahead_[committed_ - 1 - ahead_base_];
  std::vector<float> biased;
  if (!bias.empty()) {
    biased.assign(logits.begin(), logits.end());
    for (const auto& [token, b] : bias)
      if (token >= 0 && static_cast<size_t>(token) < biased.size()) biased[static_cast<size_t>(token)] += b;
    logits = biased;
  }
  if (seen) seen->assign(logits.begin(), logits.end());
  return next_token(policy, logits, backend, sample);
}

size_t Speculator::draft_budget(size_t more) const {
  // k drafts give k + 1 choices after t; more than `more` of them would be thrown away.
  if (!drafter_ || skip_ > 0 || more < 2) return 0;
  const size_t n = seq_.tokens().size();
  // verify appends 1 + k tokens and may take k back: the rollback ring must reach that far.
  const size_t room = seq_.rollback_room();
  if (room < 2 || n + 2 > seq_.capacity()) return 0;
  return std::min({k_now_, more - 1, room - 1, seq_.capacity() - n - 1});
}

void Speculator::feed(Token t, size_t more) {
  if (!drafter_) {
    seq_.append(std::span<const Token>(&t, 1));
    ++committed_;
    return;
  }
  history_.push_back(t);
  if (seq_.tokens().size() > committed_) {
    if (seq_.tokens()[committed_] == t) {  // the draft was right: already in the context
      ++committed_;
      ++round_accepted_;
      ++counts_.accepted;
      if (seq_.tokens().size() == committed_) settle_round();
      return;
    }
    seq_.truncate(committed_);  // the rest of the drafts go
    settle_round();
  }
  if (skip_ > 0) --skip_;
  std::vector<Token> drafts;
  if (const size_t budget = draft_budget(more)) drafts = drafter_->draft(seq_, history_, budget);
  if (drafts.size() > draft_budget(more)) drafts.resize(draft_budget(more));
  if (drafts.empty()) {
    seq_.append(std::span<const Token>(&t, 1));
    ++committed_;
    return;
  }
  std::vector<Token> row;
  row.reserve(1 + drafts.size());
  row.push_back(t);
  row.insert(row.end(), drafts.begin(), drafts.end());
  ahead_base_ = committed_;
  ahead_ = seq_.verify(row);
  ++committed_;
  round_drafted_ = drafts.size();
  round_accepted_ = 0;
  counts_.drafted += drafts.size();
}

void Speculator::settle_round() {
  if (round_drafted_ == 0) return;
  // Full acceptance: one deeper next time; none: halve, and at depth 1 stop drafting for a
  // while (1, 2, 4 ... 32 steps) so a drafter that keeps missing costs little.
  if (round_accepted_ == round_drafted_) {
    k_now_ = std::min(k_max_, k_now_ + 1);
    cooldown_ = 0;
  } else if (round_accepted_ == 0) {
    if (k_now_ > 1) k_now_ /= 2;
    else {
      cooldown_ = std::min<size_t>(32, cooldown_ ? cooldown_ * 2 : 1);
      skip_ = cooldown_;
    }
  } else {
    cooldown_ = 0;
  }
  round_drafted_ = round_accepted_ = 0;
}

void Speculator::finish() {
  if (seq_.tokens().size() > committed_) seq_.truncate(committed_);
  settle_round();
}

}  // namespace ds4::serving
