// PrefixCache: choosing and applying the restore point with the longest common token prefix,
// keeping restore points (warm sessions in RAM, checkpoints on disk), spill and the shutdown
// writes. See prefix_cache.hpp for the policy.
#include "gateway/serving/prefix_cache.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "gateway/cache/token_prefix.hpp"

namespace ds4::serving {
namespace {

// Contract records travel with disk checkpoints; an image this large is not copied into every
// checkpoint (the records stay in RAM and the checkpoint still restores the KV state).
constexpr size_t kMaxContractImageBytes = size_t{16} << 20;

// A prompt's bytes and where each of its tokens starts in them: how a restore point (the live
// context, a warm session, a checkpoint) whose tokens differ from the prompt's but whose bytes
// are a prefix of the prompt's bytes is recognised and continued. The constructor throws what
// token_bytes throws (an id the tokenizer does not know). Holds a view of `prompt`: use it only
// while that vector is unchanged.
class PromptBytes {
 public:
  PromptBytes(const EngineBackend& backend, std::span<const Token> prompt)
      : backend_(backend), prompt_(prompt), offset_(prompt.size() + 1) {
    for (size_t i = 0; i < prompt.size(); i++) {
      offset_[i] = text_.size();
      text_ += backend.token_bytes(prompt[i]);
    }
    offset_[prompt.size()] = text_.size();
  }

  // Where the point's bytes end in the prompt's bytes; 0 when they are not a prefix of them, or
  // when the point is a token prefix of the prompt (the token match handles that).
  size_t end_of(std::span<const Token> point) const {
    const size_t c = cache::common_prefix<Token>(point, prompt_);
    if (c == point.size()) return 0;
    size_t pos = offset_[c];
    try {
      for (size_t i = c; i < point.size(); i++) {
        const std::string b = backend_.token_bytes(point[i]);
        if (text_.compare(pos, b.size(), b) != 0) return 0;
        pos += b.size();
      }
    } catch (const std::exception&) {
      return 0;
    }
    return pos;
  }

  // The point's tokens + the tokenization of the prompt's text after `end` (its end_of). Never
  // slice the prompt's own tokenization at a byte boundary instead: BPE may merge across it.
  std::vector<Token> extend(std::vector<Token> point, size_t end) const {
    std::vector<Token> rest = backend_.encode(std::string_view(text_).substr(end));
    point.insert(point.end(), rest.begin(), rest.end());
    return point;
  }

  size_t size() const { return text_.size(); }

 private:
  const EngineBackend& backend_;
  std::span<const Token> prompt_;
  std::string text_;
  std::vector<size_t> offset_;
};

uint64_t unix_now() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

}  // namespace

PrefixCache::PrefixCache(PrefixCacheConfig config, Metrics& metrics, protocol::ContractStore& contracts)
    : config_(std::move(config)), metrics_(metrics), contracts_(contracts), hot_(config_.hot_bytes) {}

void PrefixCache::open(const EngineBackend& backend) {
  if (backend_) throw std::logic_error("PrefixCache::open: already open");
  backend_ = &backend;
  cache::DiskStoreConfig dc;
  dc.dir = config_.cache_dir;
  dc.budget_bytes = config_.disk_bytes;
  dc.model_fingerprint = backend.fingerprint();
  auto disk =
      std::make_unique<cache::DiskStore>(dc, [this](std::string_view event, std::string_view reason, uint64_t bytes) {
        metrics_.count_checkpoint_event(event, reason, double(bytes));
      });
  if (!config_.cache_dir.empty() && config_.disk_bytes > 0 && !dc.model_fingerprint)
    spdlog::warn("serving: the engine gives no model fingerprint; disk KV checkpoints are off");
  metrics_.set_kv_cache_usage("disk", double(disk->files()), double(disk->bytes()));
  // The echo contracts of the turns in those checkpoints: requests render against them before
  // the worker loads anything, so they must be back before the first request.
  disk->for_each_contracts([this](const std::string& image) {
    try {
      contracts_.merge(image);
    } catch (const std::exception& e) {
      spdlog::warn("kv checkpoints: contract records unreadable: {}", e.what());
    }
  });
  std::lock_guard lock(mu_);
  disk_ = std::move(disk);
}

void PrefixCache::reuse(EngineSequence& seq, GenerationJob& job, GenerationUsage& usage) {
  std::lock_guard work(work_mu_);
  if (!backend_) throw std::logic_error("PrefixCache::reuse before open");
  const std::vector<Token>& live = seq.tokens();
  usage.cached_tokens = 0;
  // The live tokens are no token prefix of the prompt but their bytes are a prefix of its bytes,
  // and text follows them: the prompt becomes live + the tokenization of that text.
  if (!live.empty() && !cache::is_prefix<Token>(live, job.prompt)) {
    try {
      const PromptBytes bytes(*backend_, job.prompt);
      if (const size_t end = bytes.end_of(live); end != 0 && end < bytes.size()) job.prompt = bytes.extend(live, end);
    } catch (const std::exception& e) {
      spdlog::debug("serving: text prefix match failed: {}", e.what());
    }
  }
  match_restore_points_by_bytes(seq, job);
  const std::vector<Token>& prompt = job.prompt;

  // Live: extend, or take back to the first differing token when the rollback rings reach it.
  // Reusing every prompt token needs the logits after the last one, which only an untouched
  // live context of exactly the prompt is sure to have; a truncated one keeps one token back.
  size_t live_k = 0;
  if (!live.empty()) {
    size_t k = cache::common_prefix<Token>(live, prompt);
    if (k == prompt.size() && (k < live.size() || seq.logits().empty())) k = prompt.size() - 1;
    if (k < live.size() && seq.truncate_floor() > k) k = 0;
    live_k = k;
  }
  std::optional<size_t> warm = hot_.find(prompt, prompt.size());
  const size_t warm_k = warm ? hot_.at(*warm).tokens.size() : 0;
  std::optional<cache::DiskMatch> disk = disk_on() ? disk_->find(prompt, prompt.size()) : std::nullopt;
  const size_t disk_k = disk ? disk->tokens : 0;

  if (live_k > 0 && live_k >= warm_k && live_k >= disk_k) {
    if (live_k < live.size()) {
      save_live_before_switch(seq, {}, {});
      seq.truncate(live_k);
      live_of(seq).saved.clear();
    }
    usage.cache = CacheOutcome::Live;
    usage.cached_tokens = live_k;
    return;
  }
  if (warm_k > 0 && warm_k >= disk_k && restore_warm(seq, *warm, prompt, usage)) return;
  if (disk_k > 0 && restore_disk(seq, *disk, job, usage)) return;
  // Nothing to reuse.
  save_live_before_switch(seq, {}, {});
  usage.cache = live.empty() ? CacheOutcome::Cold : CacheOutcome::Miss;
  seq.clear();
  live_of(seq) = Live{{}, live_of(seq).session, std::nullopt};
}

bool PrefixCache::restore_warm(EngineSequence& seq, size_t index, std::span<const Token> prompt,
                               GenerationUsage& usage) {
  const std::vector<Token> tokens = hot_.at(index).tokens;
  save_live_before_switch(seq, tokens, {});  // may reorder the store; the protected entry stays
  auto again = hot_.find(prompt, tokens.size());
  if (!again || hot_.at(*again).tokens.size() != tokens.size()) return false;
  seq.restore(hot_.use(*again).state);
  live_of(seq).restored = Restored{tokens, {}};
  live_of(seq).saved = tokens;
  usage.cache = CacheOutcome::Warm;
  usage.cached_tokens = tokens.size();
  return true;
}

bool PrefixCache::restore_disk(EngineSequence& seq, const cache::DiskMatch& match, const GenerationJob& job,
                               GenerationUsage& usage) {
  save_live_before_switch(seq, {}, match.name);
  auto checkpoint = disk_->load(match.name);
  if (!checkpoint) return false;
  try {
    seq.restore(checkpoint->state);
  } catch (const std::exception& e) {
    spdlog::warn("kv checkpoints: {} does not restore into the engine ({}); removed", match.name, e.what());
    disk_->remove(match.name, "restore_failed");
    return false;
  }
  if (!checkpoint->contracts.empty()) {
    try {
      contracts_.merge(checkpoint->contracts);
    } catch (const std::exception& e) {
      spdlog::warn("kv checkpoints: the contract records of {} are unreadable: {}", match.name, e.what());
    }
  }
  live_of(seq).restored = Restored{checkpoint->tokens, match.name};
  live_of(seq).saved = checkpoint->tokens;
  usage.cache = CacheOutcome::Disk;
  usage.cached_tokens = checkpoint->tokens.size();
  // Warm from now on: the next switch back to this conversation is a copy, not a read.
  if (hot_.budget() > 0) {
    cache::HotEntry e;
    e.tokens = std::move(checkpoint->tokens);
    e.state = std::move(checkpoint->state);
    e.reason = checkpoint->reason;
    e.on_disk = true;
    e.hits = 1;
    e.session = job.session;
    spill(hot_.insert(std::move(e)), std::vector<std::string>{match.name});
  }
  return true;
}

// A turn end holds the tokens the model sampled; the next prompt re-renders that turn as text,
// and the tokenizer may split the same bytes differently (a merge the model did not sample).
// Then the turn's warm session or checkpoint is no token prefix of the prompt though its bytes
// are, and only an older restore point matched: every turn of an agent session re-prefilled
// its previous turns. When a warm or disk restore point reaches further than every token match
// and its bytes are a prefix of the prompt's bytes, the prompt becomes its tokens + the
// tokenization of the remaining text (as for the live context), and the token match finds it.
void PrefixCache::match_restore_points_by_bytes(const EngineSequence& seq, GenerationJob& job) {
  const bool disk_on = this->disk_on() && disk_->files() > 0;
  if (hot_.size() == 0 && !disk_on) return;
  const std::vector<Token>& prompt = job.prompt;
  size_t best = cache::common_prefix<Token>(seq.tokens(), prompt);
  if (auto w = hot_.find(prompt, prompt.size())) best = std::max(best, hot_.at(*w).tokens.size());
  if (disk_on)
    if (auto d = disk_->find(prompt, prompt.size())) best = std::max(best, d->tokens);
  try {
    const PromptBytes bytes(*backend_, prompt);
    auto usable = [&](std::span<const Token> point) { return bytes.end_of(point) != 0; };
    std::vector<Token> point;
    if (auto w = hot_.find_longest_if(best, usable)) point = hot_.at(*w).tokens;
    if (disk_on)
      if (auto d = disk_->longest_tokens_if(std::max(best, point.size()), usable)) point = std::move(*d);
    if (point.empty()) return;
    const size_t end = bytes.end_of(point);
    job.prompt = bytes.extend(std::move(point), end);
  } catch (const std::exception& e) {
    spdlog::debug("serving: byte match skipped: {}", e.what());
  }
}

void PrefixCache::set_session(const EngineSequence& seq, std::string session) {
  std::lock_guard work(work_mu_);
  live_of(seq).session = std::move(session);
}

void PrefixCache::keep(const EngineSequence& seq, cache::CheckpointReason reason, bool to_disk) {
  std::lock_guard work(work_mu_);
  const std::vector<Token>& tokens = seq.tokens();
  if (tokens.empty() || tokens.size() < config_.checkpoint_min_tokens) return;
  const bool want_hot = hot_.budget() > 0 && reason != cache::CheckpointReason::Interval;
  const bool want_disk = to_disk && disk_on() && !disk_->contains(tokens);
  if (!want_disk && (!want_hot || live_of(seq).saved == tokens)) return;
  std::vector<uint8_t> state = seq.snapshot();
  if (state.empty()) return;  // this engine has no snapshots
  if (want_disk) store_on_disk(reason, tokens, state);
  if (want_hot) {
    cache::HotEntry e;
    e.tokens = tokens;
    e.state = std::move(state);
    e.reason = reason;
    e.on_disk = disk_on() && disk_->contains(tokens);
    e.session = live_of(seq).session;
    spill(hot_.insert(std::move(e)), {});
    live_of(seq).saved = tokens;
  }
}

void PrefixCache::save_live_before_switch(const EngineSequence& seq, std::span<const Token> protect,
                                          const std::string& protect_name) {
  const std::vector<Token>& tokens = seq.tokens();
  if (tokens.empty() || tokens.size() < config_.checkpoint_min_tokens || live_of(seq).saved == tokens) return;
  const bool to_disk = disk_on();
  if (hot_.budget() == 0 && !to_disk) return;
  std::vector<uint8_t> state = seq.snapshot();
  if (state.empty()) return;
  const std::vector<std::string> keep =
      protect_name.empty() ? std::vector<std::string>{} : std::vector<std::string>{protect_name};
  if (hot_.budget() > 0) {
    cache::HotEntry e;
    e.tokens = tokens;
    e.state = std::move(state);
    e.reason = cache::CheckpointReason::Evict;
    e.on_disk = to_disk && disk_->contains(tokens);
    e.session = live_of(seq).session;
    spill(hot_.insert(std::move(e), protect), keep);
  } else {
    store_on_disk(cache::CheckpointReason::Evict, tokens, std::move(state), keep);
  }
  live_of(seq).saved = tokens;
}

void PrefixCache::spill(std::vector<cache::HotEntry> evicted, std::span<const std::string> keep) {
  for (cache::HotEntry& e : evicted)
    if (!e.on_disk && disk_on())
      store_on_disk(cache::CheckpointReason::Evict, std::move(e.tokens), std::move(e.state), keep);
}

void PrefixCache::store_on_disk(cache::CheckpointReason reason, std::vector<Token> tokens, std::vector<uint8_t> state,
                                std::span<const std::string> keep) {
  if (!disk_on()) return;
  cache::Checkpoint c;
  c.reason = reason;
  c.created_unix = unix_now();
  c.tokens = std::move(tokens);
  c.state = std::move(state);
  // Only the contract records of the turns inside these tokens: a checkpoint restores its own
  // conversation's contracts, and its size does not grow with other conversations.
  const std::vector<uint64_t> hashes = cache::prefix_hashes(std::span<const Token>(c.tokens));
  c.contracts =
      contracts_.serialize_if([&](uint64_t end, uint64_t hash) { return end < hashes.size() && hashes[end] == hash; });
  if (c.contracts.size() > kMaxContractImageBytes) c.contracts.clear();
  if (disk_->store(c, keep)) hot_.mark_on_disk(c.tokens);
}

std::optional<size_t> PrefixCache::restored_tokens(const EngineSequence& seq) const {
  std::lock_guard work(work_mu_);
  auto it = live_.find(&seq);
  if (it == live_.end() || !it->second.restored) return std::nullopt;
  return it->second.restored->tokens.size();
}

void PrefixCache::drop_failed_restore(EngineSequence& seq) {
  std::lock_guard work(work_mu_);
  if (const std::optional<Restored>& restored = live_of(seq).restored) {
    hot_.erase(restored->tokens);
    if (!restored->disk_name.empty() && disk_) disk_->remove(restored->disk_name, "load_failed");
    else if (disk_ && disk_->contains(restored->tokens))
      disk_->remove(cache::checkpoint_file_name(disk_->config().model_fingerprint, restored->tokens), "load_failed");
  }
  seq.clear();
  live_of(seq) = Live{{}, live_of(seq).session, std::nullopt};
}

void PrefixCache::clear_live(EngineSequence& seq) {
  std::lock_guard work(work_mu_);
  live_of(seq) = Live{{}, live_of(seq).session, std::nullopt};
  seq.clear();
}

void PrefixCache::write_shutdown_checkpoints(std::span<const EngineSequence* const> live) {
  std::lock_guard work(work_mu_);
  if (!disk_on()) return;
  try {
    for (const EngineSequence* seq : live) {
      const std::vector<Token>& tokens = seq->tokens();
      if (!tokens.empty() && tokens.size() >= config_.checkpoint_min_tokens && !disk_->contains(tokens)) {
        std::vector<uint8_t> state = seq->snapshot();
        if (!state.empty()) store_on_disk(cache::CheckpointReason::Shutdown, tokens, std::move(state));
      }
    }
    for (cache::HotEntry& e : hot_.drain())
      if (!e.on_disk && !disk_->contains(e.tokens))
        store_on_disk(cache::CheckpointReason::Shutdown, std::move(e.tokens), std::move(e.state));
  } catch (const std::exception& e) {
    spdlog::error("kv checkpoints: shutdown checkpoints failed: {}", e.what());
  }
}

void PrefixCache::publish() {
  std::lock_guard work(work_mu_);
  metrics_.set_kv_cache_usage("warm", double(hot_.size()), double(hot_.bytes()));
  if (disk_) metrics_.set_kv_cache_usage("disk", double(disk_->files()), double(disk_->bytes()));
  std::lock_guard lock(mu_);
  hot_sessions_published_ = hot_.size();
  hot_bytes_published_ = hot_.bytes();
}

std::string PrefixCache::health() const {
  std::lock_guard lock(mu_);
  return disk_ ? disk_->health() : std::string();
}

PrefixCache::Stats PrefixCache::stats() const {
  std::lock_guard lock(mu_);
  Stats s;
  s.warm_sessions = hot_sessions_published_;
  s.warm_bytes = hot_bytes_published_;
  if (disk_) {
    s.disk_files = disk_->files();
    s.disk_bytes = disk_->bytes();
  }
  return s;
}

}  // namespace ds4::serving
