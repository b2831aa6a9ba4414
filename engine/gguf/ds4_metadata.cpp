// One writer for the DS4 GGUF metadata keys (see ds4_metadata.hpp for why).
#include "engine/gguf/ds4_metadata.hpp"

#include "engine/gguf/gguf_reader.hpp"

namespace ds4::gguf {

Ds4HyperParams Ds4HyperParams::from_metadata(const GgufFile& f) {
  const std::string k = "deepseek4.";
  Ds4HyperParams hp;
  hp.hc_eps = f.get<float>(k + "hyper_connection.epsilon");
  hp.rms_eps = f.get<float>(k + "attention.layer_norm_rms_epsilon");
  hp.rope_theta = f.get<float>(k + "rope.freq_base");
  hp.compress_rope_theta = f.get<float>(k + "attention.compress_rope_freq_base");
  hp.rope_factor = f.get<float>(k + "rope.scaling.factor");
  hp.rope_orig_ctx = static_cast<uint32_t>(f.get<uint64_t>(k + "rope.scaling.original_context_length"));
  hp.beta_fast = f.get<float>(k + "rope.scaling.yarn_beta_fast");
  hp.beta_slow = f.get<float>(k + "rope.scaling.yarn_beta_slow");
  hp.expert_scale = f.get<float>(k + "expert_weights_scale");
  hp.swiglu_limit = f.get_array<float>(k + "swiglu_clamp_exp").at(0);
  hp.context_length = f.get_or<uint64_t>(k + "context_length", 1048576);
  return hp;
}

void set_ds4_model_metadata(GgufWriter& w, const Ds4Dims& d, const Ds4HyperParams& hp, const std::string& model_name) {
  const std::string k = "deepseek4.";
  w.set("general.architecture", "deepseek4");
  w.set("general.name", model_name);
  w.set("general.alignment", uint32_t{32});
  w.set(k + "block_count", d.n_layer);
  w.set(k + "context_length", hp.context_length);
  w.set(k + "embedding_length", d.n_embd);
  w.set(k + "vocab_size", d.n_vocab);
  w.set(k + "attention.head_count", d.n_head);
  w.set(k + "attention.head_count_kv", d.n_head_kv);
  w.set(k + "attention.key_length", d.head_dim);
  w.set(k + "attention.value_length", d.value_dim);
  w.set(k + "rope.dimension_count", d.rope_dim);
  w.set(k + "attention.q_lora_rank", d.q_lora_rank);
  w.set(k + "attention.output_lora_rank", d.out_lora_rank);
  w.set(k + "attention.output_group_count", d.out_groups);
  w.set(k + "expert_count", d.n_expert);
  w.set(k + "expert_used_count", d.n_expert_used);
  w.set(k + "expert_shared_count", d.n_expert_shared);
  w.set(k + "expert_feed_forward_length", d.expert_ff);
  w.set(k + "expert_group_count", uint32_t{0});
  w.set(k + "expert_group_used_count", uint32_t{0});
  w.set(k + "hash_layer_count", d.n_hash_layer);
  w.set(k + "attention.sliding_window", d.sliding_window);
  w.set(k + "attention.indexer.head_count", d.indexer_heads);
  w.set(k + "attention.indexer.key_length", d.indexer_dim);
  w.set(k + "attention.indexer.top_k", d.indexer_top_k);
  w.set(k + "hyper_connection.count", d.hc_count);
  w.set(k + "hyper_connection.sinkhorn_iterations", d.hc_sinkhorn_iters);
  w.set(k + "hyper_connection.epsilon", hp.hc_eps);
  w.set(k + "attention.layer_norm_rms_epsilon", hp.rms_eps);
  w.set(k + "rope.freq_base", hp.rope_theta);
  w.set(k + "attention.compress_rope_freq_base", hp.compress_rope_theta);
  w.set(k + "rope.scaling.type", "yarn");
  w.set(k + "rope.scaling.factor", hp.rope_factor);
  w.set(k + "rope.scaling.original_context_length", hp.rope_orig_ctx);
  w.set(k + "rope.scaling.yarn_beta_fast", hp.beta_fast);
  w.set(k + "rope.scaling.yarn_beta_slow", hp.beta_slow);
  w.set(k + "expert_weights_scale", hp.expert_scale);
  w.set(k + "expert_weights_norm", true);
  w.set(k + "swiglu_clamp_exp", make_array<float>(std::vector<float>(d.n_layer, hp.swiglu_limit)));
  w.set(k + "attention.compress_ratios", make_array<uint32_t>(d.compress_ratios));
}

void set_ds4_tokenizer_metadata(GgufWriter& w, const Ds4Vocab& v) {
  w.set("tokenizer.ggml.model", "gpt2");
  w.set("tokenizer.ggml.pre", "joyai-llm");
  w.set("tokenizer.ggml.tokens", make_string_array(v.tokens));
  w.set("tokenizer.ggml.merges", make_string_array(v.merges));
  w.set("tokenizer.ggml.token_type", make_array<int32_t>(v.token_types));
  w.set("tokenizer.ggml.bos_token_id", v.bos_id);
  w.set("tokenizer.ggml.eos_token_id", v.eos_id);
  w.set("tokenizer.ggml.add_bos_token", true);
  w.set("tokenizer.ggml.add_eos_token", false);
}

}  // namespace ds4::gguf
