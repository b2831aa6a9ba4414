// config.json / tokenizer.json <-> GGUF metadata; see official_config.hpp.
#include "toolchain/convert/official_config.hpp"

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/gguf/ds4_metadata.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "toolchain/convert/convert_error.hpp"

namespace ds4::convert {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConvertError(path, "", "cannot open (an official checkpoint needs config.json and tokenizer.json)");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json::object parse_object(const std::string& path, const std::string& text) {
  json::value v;
  try {
    v = json::parse(text);
  } catch (const std::exception& e) {
    throw ConvertError(path, "", std::string("not valid JSON: ") + e.what());
  }
  if (!v.is_object()) throw ConvertError(path, "", "top level is not a JSON object");
  return v.as_object();
}

struct Reader {
  const std::string& path;
  const json::object& o;
  const json::value& need(const char* key) const {
    const json::value* v = o.if_contains(key);
    if (!v) throw ConvertError(path, "", "missing key '" + std::string(key) + "'");
    return *v;
  }
  uint32_t u32(const char* key) const {
    const json::value& v = need(key);
    if (v.is_int64() && v.as_int64() >= 0 && v.as_int64() <= UINT32_MAX) return static_cast<uint32_t>(v.as_int64());
    if (v.is_uint64() && v.as_uint64() <= UINT32_MAX) return static_cast<uint32_t>(v.as_uint64());
    throw ConvertError(path, "", "key '" + std::string(key) + "' must be a non-negative integer");
  }
  float f32(const char* key) const {
    const json::value& v = need(key);
    if (v.is_number()) return static_cast<float>(v.to_number<double>());
    throw ConvertError(path, "", "key '" + std::string(key) + "' must be a number");
  }
};

}  // namespace

OfficialConfig read_official_config(const std::string& dir) {
  OfficialConfig c;
  const std::string cpath = (fs::path(dir) / "config.json").string();
  c.config_json = slurp(cpath);
  const json::object o = parse_object(cpath, c.config_json);
  const Reader r{cpath, o};
  gguf::Ds4Dims& d = c.dims;
  d.n_embd = r.u32("hidden_size");
  d.n_layer = r.u32("num_hidden_layers");
  d.n_vocab = r.u32("vocab_size");
  d.n_head = r.u32("num_attention_heads");
  d.n_head_kv = 1;
  d.head_dim = d.value_dim = r.u32("head_dim");
  d.rope_dim = r.u32("qk_rope_head_dim");
  d.q_lora_rank = r.u32("q_lora_rank");
  d.out_lora_rank = r.u32("o_lora_rank");
  d.out_groups = r.u32("o_groups");
  d.n_expert = r.u32("n_routed_experts");
  d.n_expert_used = r.u32("num_experts_per_tok");
  d.n_expert_shared = r.u32("n_shared_experts");
  d.expert_ff = r.u32("moe_intermediate_size");
  d.n_hash_layer = r.u32("num_hash_layers");
  d.sliding_window = r.u32("sliding_window");
  d.indexer_heads = r.u32("index_n_heads");
  d.indexer_dim = r.u32("index_head_dim");
  d.indexer_top_k = r.u32("index_topk");
  d.hc_count = r.u32("hc_mult");
  d.hc_sinkhorn_iters = r.u32("hc_sinkhorn_iters");
  c.hp.hc_eps = r.f32("hc_eps");
  c.hp.rms_eps = r.f32("rms_norm_eps");
  c.hp.rope_theta = r.f32("rope_theta");
  c.hp.compress_rope_theta = r.f32("compress_rope_theta");
  c.hp.expert_scale = r.f32("routed_scaling_factor");
  c.hp.swiglu_limit = r.f32("swiglu_limit");
  c.hp.context_length = r.u32("max_position_embeddings");
  c.bos_id = static_cast<int32_t>(r.u32("bos_token_id"));
  c.eos_id = static_cast<int32_t>(r.u32("eos_token_id"));
  const json::value& ratios = r.need("compress_ratios");
  if (!ratios.is_array()) throw ConvertError(cpath, "", "key 'compress_ratios' must be an array");
  for (const json::value& x : ratios.as_array()) {
    if (!x.is_int64() || x.as_int64() < 0) throw ConvertError(cpath, "", "compress_ratios entries must be integers");
    d.compress_ratios.push_back(static_cast<uint32_t>(x.as_int64()));
  }
  if (d.compress_ratios.size() < d.n_layer)
    throw ConvertError(cpath, "",
                       "compress_ratios has " + std::to_string(d.compress_ratios.size()) + " entries for " +
                           std::to_string(d.n_layer) + " layers");
  d.compress_ratios.resize(d.n_layer);
  for (size_t i = 0; i < d.n_layer; ++i)
    if (d.compress_ratios[i] != 0 && d.compress_ratios[i] != 4 && d.compress_ratios[i] != 128)
      throw ConvertError(cpath, "",
                         "compress_ratios[" + std::to_string(i) + "] = " + std::to_string(d.compress_ratios[i]) +
                             " (allowed: 0, 4, 128)");
  const json::value& rs = r.need("rope_scaling");
  if (!rs.is_object()) throw ConvertError(cpath, "", "key 'rope_scaling' must be an object");
  const Reader rr{cpath, rs.as_object()};
  c.hp.rope_factor = rr.f32("factor");
  c.hp.rope_orig_ctx = rr.u32("original_max_position_embeddings");
  c.hp.beta_fast = rr.f32("beta_fast");
  c.hp.beta_slow = rr.f32("beta_slow");

  const std::string tpath = (fs::path(dir) / "tokenizer.json").string();
  const json::object t = parse_object(tpath, slurp(tpath));
  const json::value* model = t.if_contains("model");
  const json::value* vocab = model && model->is_object() ? model->as_object().if_contains("vocab") : nullptr;
  const json::value* merges = model && model->is_object() ? model->as_object().if_contains("merges") : nullptr;
  if (!vocab || !vocab->is_object() || !merges || !merges->is_array())
    throw ConvertError(tpath, "", "needs model.vocab (object) and model.merges (array)");
  c.tokens.assign(d.n_vocab, std::string());
  c.token_types.assign(d.n_vocab, 0);
  auto place = [&](const std::string& tok, int64_t id, int32_t type) {
    if (id < 0 || id >= int64_t(d.n_vocab))
      throw ConvertError(
          tpath, "",
          "token '" + tok + "' has id " + std::to_string(id) + ", outside vocab_size " + std::to_string(d.n_vocab));
    c.tokens[id] = tok;
    c.token_types[id] = type;
  };
  for (const auto& kv : vocab->as_object()) {
    if (!kv.value().is_int64())
      throw ConvertError(tpath, "", "vocab id of '" + std::string(kv.key()) + "' is not an integer");
    place(std::string(kv.key()), kv.value().as_int64(), 1);
  }
  if (const json::value* added = t.if_contains("added_tokens"); added && added->is_array())
    for (const json::value& a : added->as_array()) {
      if (!a.is_object() || !a.as_object().if_contains("id") || !a.as_object().if_contains("content"))
        throw ConvertError(tpath, "", "added_tokens entries need id and content");
      const bool special = a.as_object().if_contains("special") && a.as_object().at("special").is_bool() &&
                           a.as_object().at("special").as_bool();
      place(std::string(a.as_object().at("content").as_string()), a.as_object().at("id").to_number<int64_t>(),
            special ? 3 : 1);
    }
  for (uint32_t i = 0; i < d.n_vocab; ++i)
    if (c.token_types[i] == 0) throw ConvertError(tpath, "", "no token has id " + std::to_string(i));
  for (const json::value& m : merges->as_array()) {
    if (m.is_string()) c.merges.emplace_back(m.as_string());
    else if (m.is_array() && m.as_array().size() == 2 && m.as_array()[0].is_string() && m.as_array()[1].is_string())
      c.merges.push_back(std::string(m.as_array()[0].as_string()) + " " + std::string(m.as_array()[1].as_string()));
    else throw ConvertError(tpath, "", "model.merges entries must be \"a b\" strings or [a, b] pairs");
  }
  return c;
}

void set_ds4_metadata(gguf::GgufWriter& w, const OfficialConfig& c, const std::string& model_name, bool tokenizer) {
  gguf::set_ds4_model_metadata(w, c.dims, c.hp, model_name);
  if (!tokenizer) return;
  gguf::set_ds4_tokenizer_metadata(
      w, {c.tokens, c.merges, c.token_types, static_cast<uint32_t>(c.bos_id), static_cast<uint32_t>(c.eos_id)});
}

OfficialConfig config_from_gguf(const gguf::GgufFile& f) {
  OfficialConfig c;
  c.dims = gguf::Ds4Dims::from_metadata(f);
  const std::string k = "deepseek4.";
  c.hp = gguf::Ds4HyperParams::from_metadata(f);
  c.bos_id = static_cast<int32_t>(f.get_or<uint32_t>("tokenizer.ggml.bos_token_id", 0));
  c.eos_id = static_cast<int32_t>(f.get_or<uint32_t>("tokenizer.ggml.eos_token_id", 1));
  c.tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
  c.merges = f.get_array<std::string>("tokenizer.ggml.merges");
  c.token_types = f.has("tokenizer.ggml.token_type") ? f.get_array<int32_t>("tokenizer.ggml.token_type")
                                                     : std::vector<int32_t>(c.tokens.size(), 1);
  return c;
}

void write_official_config(const std::string& dir, const OfficialConfig& c) {
  const gguf::Ds4Dims& d = c.dims;
  json::array ratios;
  for (uint32_t r : d.compress_ratios) ratios.push_back(r);
  json::object cfg{{"architectures", json::array{"DeepseekV4ForCausalLM"}},
                   {"hidden_size", d.n_embd},
                   {"num_hidden_layers", d.n_layer},
                   {"vocab_size", d.n_vocab},
                   {"num_attention_heads", d.n_head},
                   {"head_dim", d.head_dim},
                   {"qk_rope_head_dim", d.rope_dim},
                   {"q_lora_rank", d.q_lora_rank},
                   {"o_lora_rank", d.out_lora_rank},
                   {"o_groups", d.out_groups},
                   {"n_routed_experts", d.n_expert},
                   {"num_experts_per_tok", d.n_expert_used},
                   {"n_shared_experts", d.n_expert_shared},
                   {"moe_intermediate_size", d.expert_ff},
                   {"num_hash_layers", d.n_hash_layer},
                   {"sliding_window", d.sliding_window},
                   {"index_n_heads", d.indexer_heads},
                   {"index_head_dim", d.indexer_dim},
                   {"index_topk", d.indexer_top_k},
                   {"hc_mult", d.hc_count},
                   {"hc_sinkhorn_iters", d.hc_sinkhorn_iters},
                   {"hc_eps", c.hp.hc_eps},
                   {"rms_norm_eps", c.hp.rms_eps},
                   {"rope_theta", c.hp.rope_theta},
                   {"compress_rope_theta", c.hp.compress_rope_theta},
                   {"compress_ratios", std::move(ratios)},
                   {"rope_scaling", json::object{{"type", "yarn"},
                                                 {"factor", c.hp.rope_factor},
                                                 {"original_max_position_embeddings", c.hp.rope_orig_ctx},
                                                 {"beta_fast", c.hp.beta_fast},
                                                 {"beta_slow", c.hp.beta_slow}}},
                   {"routed_scaling_factor", c.hp.expert_scale},
                   {"swiglu_limit", c.hp.swiglu_limit},
                   {"max_position_embeddings", c.hp.context_length},
                   {"bos_token_id", c.bos_id},
                   {"eos_token_id", c.eos_id},
                   {"torch_dtype", "bfloat16"}};
  std::ofstream(fs::path(dir) / "config.json") << json::serialize(cfg) << "\n";
  json::object vocab;
  json::array added;
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    if (i < c.token_types.size() && c.token_types[i] == 3)
      added.push_back(json::object{{"id", i}, {"content", c.tokens[i]}, {"special", true}});
    else vocab[c.tokens[i]] = i;
  }
  json::array merges;
  for (const std::string& m : c.merges) merges.push_back(json::string(m));
  json::object tok{
      {"version", "1.0"},
      {"added_tokens", std::move(added)},
      {"model", json::object{{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}}}};
  std::ofstream(fs::path(dir) / "tokenizer.json") << json::serialize(tok) << "\n";
}

}  // namespace ds4::convert
