// ds4ctl generate: run the engine on one prompt from the command line and stream the output; the
// smallest end-to-end path through the engine (GGUF -> Model, tokenizer, one Context, prefill,
// sample/decode). Stdout is only the generated text, always valid UTF-8 (Utf8Assembler); timings
// go to stderr. How the prompt is tokenized, --chat, and the output:
// docs/toolchain.md §ds4ctl-generate.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>

#include "ds4ctl/command_registry.hpp"
#include "ds4ctl/default_model.hpp"
#include "engine/cuda/backend_choice.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/loaded_model/loaded_model.hpp"
#include "engine/model/model.hpp"
#include "engine/sampler/sampler.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "gateway/protocol/utf8_assembler.hpp"

namespace {

using ds4::tokenizer::Tokenizer;
using Clock = std::chrono::steady_clock;

struct GenerateOptions {
  std::string model_path;
  std::string prompt;
  std::vector<int32_t> prompt_ids;  // --prompt-ids: used as given, no tokenization
  bool show_ids = false;
  int n_predict = 64;
  ds4::sampler::SamplerConfig sampling;
  uint64_t seed = 0;
  bool chat = false;
  unsigned threads = 0;
  std::string backend = "auto";  // --backend: engine/cuda/backend_choice.hpp
  bool exact = false;
  bool ignore_eos = false;
  uint32_t context_length = 0;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string rate(size_t n, double s) { return s > 0 ? fmt::format("{:.2f} tok/s", static_cast<double>(n) / s) : "n/a"; }

int32_t required_special(const Tokenizer& tok, std::string_view literal) {
  if (auto id = tok.special(literal)) return *id;
  throw std::runtime_error(fmt::format("the model's vocabulary has no {} token, which --chat needs", literal));
}

std::vector<int32_t> build_prompt(const Tokenizer& tok, const GenerateOptions& o) {
  if (!o.prompt_ids.empty()) return o.prompt_ids;
  std::vector<int32_t> ids;
  if (o.chat) {
    ids = {tok.bos(), required_special(tok, Tokenizer::kUser)};
    tok.append_encoded_raw(o.prompt, ids);
    ids.push_back(required_special(tok, Tokenizer::kAssistant));
    ids.push_back(required_special(tok, Tokenizer::kThinkEnd));
    return ids;
  }
  ids = tok.encode(o.prompt);
  if (ids.empty() || ids.front() != tok.bos()) ids.insert(ids.begin(), tok.bos());
  return ids;
}

int run_generate(const GenerateOptions& o) {
  ds4::LoadOptions load;
  load.threads = o.threads;
  load.arithmetic = o.exact ? ds4::Arithmetic::Exact : ds4::Arithmetic::Fast;
  const auto t_load = Clock::now();
  // --backend cuda without a usable GPU is refused (naming what is missing), never the CPU.
  ds4::LoadedModel loaded = ds4::load_model_on(ds4::cuda::parse_backend(o.backend), o.model_path, load,
                                               [](const std::string& l) { fmt::print(stderr, "{}\n", l); });
  const std::shared_ptr<ds4::Model> model = std::move(loaded.model);
  const Tokenizer& tok = loaded.tokenizer;
  const double load_s = seconds_since(t_load);

  const std::vector<int32_t> prompt = build_prompt(tok, o);
  ds4::Context ctx(model, ds4::ContextOptions{o.context_length});
  if (prompt.size() >= ctx.capacity())
    throw std::length_error(
        fmt::format("the prompt has {} tokens; the context holds {}", prompt.size(), ctx.capacity()));
  const size_t room = ctx.capacity() - prompt.size() + 1;  // the last token is sampled, not fed
  const size_t n_predict = std::min(static_cast<size_t>(o.n_predict), room);
  if (n_predict < static_cast<size_t>(o.n_predict))
    fmt::print(stderr, "note: generating {} tokens, all the context has room for\n", n_predict);

  ds4::sampler::SamplerConfig sc = o.sampling;
  sc.seed = o.seed;
  ds4::sampler::Sampler sampler(sc);
  // Logits past the tokenizer's vocabulary (padding rows of the output head) cannot be decoded.
  const size_t n_sample = std::min<size_t>(model->info().n_vocab, tok.vocab_size());

  const auto t_prefill = Clock::now();
  std::span<const float> logits = ctx.prefill(prompt);
  const double prefill_s = seconds_since(t_prefill);

  ds4::protocol::Utf8Assembler stream;
  size_t generated = 0, decoded = 0;
  double decode_s = 0.0;
  bool hit_eos = false;
  std::vector<int32_t> generated_ids;
  const auto t_gen = Clock::now();
  while (generated < n_predict) {
    const int32_t token = sampler.sample(logits.first(std::min(n_sample, logits.size())));
    ++generated;
    if (o.show_ids) generated_ids.push_back(token);
    if (token == tok.eos() && !o.ignore_eos) {
      hit_eos = true;
      break;
    }
    const std::string text = stream.push(tok.token_bytes(token));
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (generated == n_predict) break;
    const auto t_step = Clock::now();
    logits = ctx.decode(token);
    decode_s += seconds_since(t_step);
    ++decoded;
  }
  const double gen_s = seconds_since(t_gen);
  const std::string tail = stream.flush();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);

  const ds4::ModelInfo& info = model->info();
  if (o.show_ids)
    fmt::print(stderr, "prompt ids: {}\ngenerated ids: {}\n", fmt::join(prompt, " "), fmt::join(generated_ids, " "));
  fmt::print(stderr, "model: {} ({} layers, {} threads, {} arithmetic), loaded in {:.2f} s\n",
             info.name.empty() ? o.model_path : info.name, info.n_layer, info.threads, o.exact ? "exact" : "fast",
             load_s);
  fmt::print(stderr, "sampling: {}, seed {}\n",
             sc.greedy() ? std::string("greedy")
                         : fmt::format("temperature {} top-k {} top-p {} min-p {}", sc.temperature, sc.top_k, sc.top_p,
                                       sc.min_p),
             sc.seed);
  fmt::print(stderr, "prompt: {} tokens in {:.3f} s, {}\n", prompt.size(), prefill_s, rate(prompt.size(), prefill_s));
  fmt::print(stderr, "generation: {} tokens in {:.3f} s, {} ({} decode steps at {}){}\n", generated, gen_s,
             rate(generated, gen_s), decoded, rate(decoded, decode_s), hit_eos ? ", stopped at EOS" : "");
  return 0;
}

ds4ctl::Register reg{
    "generate", "Generate text from a prompt and report prompt/generation speed", [](CLI::App& sub) -> ds4ctl::RunFn {
      auto o = std::make_shared<GenerateOptions>();
      auto seed_given = std::make_shared<bool>(false);
      o->model_path = ds4ctl::default_model_path();
      sub.add_option("-m,--model", o->model_path, "GGUF model file (default: the embedded agent model)")
          ->capture_default_str()
          ->check(CLI::ExistingFile);
      auto* text = sub.add_option("-p,--prompt", o->prompt, "Prompt text");
      auto* ids = sub.add_option("--prompt-ids", o->prompt_ids, "Prompt as token ids (comma-separated), used as given")
                      ->delimiter(',')
                      ->excludes(text);
      text->excludes(ids);
      sub.add_flag("--show-ids", o->show_ids, "Print prompt and generated token ids on stderr");
      sub.add_option("-n,--n-predict", o->n_predict, "Tokens to generate")
          ->capture_default_str()
          ->check(CLI::NonNegativeNumber);
      sub.add_option("--temp,--temperature", o->sampling.temperature, "Sampling temperature; 0 is greedy")
          ->capture_default_str();
      sub.add_option("--top-k", o->sampling.top_k, "Keep the k most probable tokens; 0 keeps all")
          ->capture_default_str();
      sub.add_option("--top-p", o->sampling.top_p, "Nucleus mass to keep")->capture_default_str();
      sub.add_option("--min-p", o->sampling.min_p, "Drop tokens below min-p times the top one")->capture_default_str();
      sub.add_option_function<uint64_t>(
          "--seed", [o, seed_given](uint64_t s) { o->seed = s, *seed_given = true; },
          "Random seed (default: random, printed on stderr)");
      sub.add_flag("--chat", o->chat, "Render one non-thinking user turn: BOS <｜User｜>text<｜Assistant｜></think>");
      sub.add_option("-t,--threads", o->threads, "Worker threads; 0 uses every core")->capture_default_str();
      sub.add_option("--backend", o->backend, "auto, cpu or cuda (auto: the GPU when one is usable)")
          ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
          ->capture_default_str();
      sub.add_flag("--exact", o->exact, "Exact arithmetic (bit-identical to the reference engine)");
      sub.add_flag("--ignore-eos", o->ignore_eos, "Keep generating after end-of-sentence");
      sub.add_option("-c,--ctx-size", o->context_length, "Context length in tokens; 0: the model's, capped at 65536")
          ->capture_default_str();
      return [o, seed_given, text, ids] {
        if (text->count() == 0 && ids->count() == 0) throw CLI::RequiredError("-p,--prompt or --prompt-ids");
        if (o->chat && !o->prompt_ids.empty())
          throw CLI::ValidationError("--chat", "renders text; it cannot be used with --prompt-ids");
        if (!*seed_given) o->seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
        return run_generate(*o);
      };
    }};

}  // namespace
