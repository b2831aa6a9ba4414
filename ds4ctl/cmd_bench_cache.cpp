// ds4ctl bench-cache: what the prefix cache buys, measured side by side in one run: disk rates,
// checkpoint write and read rates against them, TTFT by cache source, and write amplification of
// an interleaved agent workload. Prompts are deterministic pseudo-random token ids. What each part
// measures: docs/prefix-cache.md §what-bench-cache-measures.
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <random>

#include "ds4ctl/command_registry.hpp"
#include "gateway/cache/checkpoint_file.hpp"
#include "gateway/cache/disk_store.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using ds4::serving::Token;

struct CacheBenchOptions {
  std::string model_path;
  std::string dir;
  unsigned threads = 0;
  uint32_t tokens = 512;
  double shared = 0.95;
  uint32_t state_mib = 256;
  uint32_t turns = 6;
  uint32_t turn_tokens = 16;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void drop_page_cache(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Plain sequential write with fsync, then read back after dropping the file's cached pages.
std::pair<double, double> disk_rates(const fs::path& dir, size_t bytes) {
  std::vector<uint8_t> buf(bytes, 0x5a);
  const fs::path p = dir / "disk-probe.bin";
  auto t = Clock::now();
  ds4::cache::write_file_atomically(dir, "disk-probe.bin", buf);
  const double w = double(bytes) / seconds_since(t) / 1e9;
  drop_page_cache(p);
  t = Clock::now();
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::read(fd, buf.data() + done, bytes - done);
    if (n <= 0) break;
    done += size_t(n);
  }
  ::close(fd);
  const double r = double(done) / seconds_since(t) / 1e9;
  fs::remove(p);
  return {w, r};
}

// Checkpoint write and read rates for a given state.
std::pair<double, double> checkpoint_rates(const fs::path& dir, std::vector<Token> tokens, std::vector<uint8_t> state) {
  ds4::cache::Checkpoint c;
  c.model_fingerprint = 1;
  c.tokens = std::move(tokens);
  c.state = std::move(state);
  const std::string name = ds4::cache::checkpoint_file_name(1, c.tokens);
  auto t = Clock::now();
  const auto bytes = ds4::cache::encode_checkpoint(c);
  ds4::cache::write_file_atomically(dir, name, bytes);
  const double w = double(bytes.size()) / seconds_since(t) / 1e9;
  drop_page_cache(dir / name);
  t = Clock::now();
  const auto back = ds4::cache::read_checkpoint(dir / name);
  const double r = double(bytes.size()) / seconds_since(t) / 1e9;
  fs::remove(dir / name);
  return {w, r};
}

struct Waiter : ds4::serving::GenerationSink {
  std::promise<ds4::serving::GenerationResult> done;
  bool on_text(std::string_view) override { return true; }
  void on_finished(const ds4::serving::GenerationResult& r) override { done.set_value(r); }
};

struct Timed {
  double seconds = 0;
  ds4::serving::GenerationResult result;
};

Timed first_token(ds4::serving::Service& s, const std::vector<Token>& prompt, size_t max_tokens = 1) {
  auto sink = std::make_shared<Waiter>();
  ds4::serving::GenerationJob job;
  job.prompt = prompt;
  job.sampling.temperature = 0;
  job.max_tokens = max_tokens;
  job.sink = sink;
  auto fut = sink->done.get_future();
  const auto t = Clock::now();
  if (auto refusal = s.submit(std::move(job))) throw std::runtime_error("refused: " + refusal->message);
  Timed out;
  out.result = fut.get();
  out.seconds = seconds_since(t);
  if (out.result.finish == ds4::serving::FinishReason::Error) throw std::runtime_error(out.result.error);
  return out;
}

std::vector<Token> random_tokens(std::mt19937& rng, size_t n, uint32_t vocab) {
  std::vector<Token> t(n);
  for (auto& x : t) x = Token(1 + rng() % (vocab - 1));
  return t;
}

double written_bytes(const ds4::serving::Metrics& m) {
  // ds4d_kv_checkpoint_bytes_total{event="write"} from the text exposition.
  const std::string text = m.render();
  const std::string key = "ds4d_kv_checkpoint_bytes_total{event=\"write\"} ";
  const size_t p = text.find(key);
  return p == std::string::npos ? 0 : std::stod(text.substr(p + key.size()));
}

int run_bench_cache(const CacheBenchOptions& o) {
  spdlog::set_level(spdlog::level::warn);
  const fs::path dir =
      o.dir.empty() ? fs::temp_directory_path() / fmt::format("ds4ctl-bench-cache-{}", ::getpid()) : fs::path(o.dir);
  fs::create_directories(dir);
  struct Cleanup {
    fs::path d;
    bool own;
    ~Cleanup() {
      std::error_code ec;
      if (own) fs::remove_all(d, ec);
    }
  } cleanup{dir, o.dir.empty()};

  ds4::LoadOptions lo;
  lo.threads = o.threads;
  ds4::ContextOptions co;
  co.context_length = std::max<uint32_t>(4096, o.tokens * 2 + 64);
  auto backend = ds4::serving::Ds4Backend::load(o.model_path, lo, co);
  const uint32_t vocab = uint32_t(backend->vocab_size());
  fmt::print("model {}, {} threads, cache dir {}\n", o.model_path,
             lo.threads ? lo.threads : std::thread::hardware_concurrency(), dir.string());

  // Disk and checkpoint rates.
  const size_t probe = size_t(o.state_mib) << 20;
  const auto [dw, dr] = disk_rates(dir, probe);
  std::mt19937 rng(12);
  std::vector<uint8_t> synthetic(probe);
  for (auto& b : synthetic) b = uint8_t(rng());
  const auto [sw, sr] = checkpoint_rates(dir, random_tokens(rng, 1000, vocab), synthetic);
  synthetic.clear();
  synthetic.shrink_to_fit();

  const size_t shared_n = size_t(double(o.tokens) * o.shared);
  const std::vector<Token> base = random_tokens(rng, shared_n, vocab);
  auto with_suffix = [&](size_t salt) {
    std::vector<Token> p = base;
    std::mt19937 r2(uint32_t(1000 + salt));
    auto s = random_tokens(r2, o.tokens - shared_n, vocab);
    p.insert(p.end(), s.begin(), s.end());
    return p;
  };

  std::vector<uint8_t> real_state;  // a real snapshot at this prompt length, found on disk below
  ds4::serving::Metrics metrics;
  auto service = [&](uint64_t hot) {
    ds4::serving::ServiceConfig c;
    c.hot_bytes = hot;
    c.cache_dir = dir;
    c.disk_bytes = uint64_t(64) << 30;
    c.checkpoint_min_tokens = 1;
    auto s = std::make_unique<ds4::serving::Service>(c, metrics);
    s->set_backend(backend);
    return s;
  };
  // Cold: a service with no cache at all.
  double cold = 0;
  {
    ds4::serving::ServiceConfig c;
    auto s = std::make_unique<ds4::serving::Service>(c, metrics);
    s->set_backend(backend);
    cold = first_token(*s, with_suffix(99)).seconds;
    s->stop(std::chrono::milliseconds(0));
  }
  auto s1 = service(uint64_t(8) << 30);
  first_token(*s1, base);  // the shared prefix: cold, checkpointed to RAM and disk
  const auto live = first_token(*s1, with_suffix(1));
  first_token(*s1, random_tokens(rng, 8, vocab));  // another conversation takes the live context
  const auto warm = first_token(*s1, with_suffix(2));
  s1->stop(std::chrono::milliseconds(0));  // shutdown checkpoints
  s1.reset();
  auto s2 = service(0);  // restart, and no RAM cache: every hit below is from disk
  const auto restart = first_token(*s2, with_suffix(3));
  first_token(*s2, random_tokens(rng, 8, vocab));
  const auto disk = first_token(*s2, with_suffix(4));
  s2->stop(std::chrono::milliseconds(0));
  s2.reset();
  {
    // The state of a prompt of this length, for the real-snapshot rates.
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ds4::cache::kCheckpointSuffix) {
        auto c = ds4::cache::read_checkpoint(e.path());
        if (c.tokens.size() >= shared_n && c.state.size() > real_state.size()) real_state = std::move(c.state);
      }
  }
  const auto [rw, rr] = real_state.empty() ? std::pair{0.0, 0.0} : checkpoint_rates(dir, base, real_state);

  fmt::print("\n| what | GB/s | ÷ disk |\n|---|---|---|\n");
  fmt::print("| disk sequential write (fsync) | {:.2f} | 1 |\n| disk sequential read (cold cache) | {:.2f} | 1 |\n", dw,
             dr);
  fmt::print("| checkpoint write, {} MiB synthetic state | {:.2f} | {:.2f} |\n", o.state_mib, sw, sw / dw);
  fmt::print("| checkpoint read + verify, {} MiB synthetic | {:.2f} | {:.2f} |\n", o.state_mib, sr, sr / dr);
  if (!real_state.empty()) {
    fmt::print("| checkpoint write, real snapshot ({:.1f} MiB) | {:.2f} | {:.2f} |\n",
               double(real_state.size()) / (1 << 20), rw, rw / dw);
    fmt::print("| checkpoint read + verify, real snapshot | {:.2f} | {:.2f} |\n", rr, rr / dr);
  }
  fmt::print("\nTTFT, {}-token prompt sharing {} tokens ({:.0f}%) with an earlier one:\n\n", o.tokens, shared_n,
             100.0 * double(shared_n) / o.tokens);
  fmt::print("| served | source | cached tokens | TTFT s | ÷ cold |\n|---|---|---|---|---|\n");
  fmt::print("| cold | none | 0 | {:.3f} | 1 |\n", cold);
  auto row = [&](const char* what, const Timed& t) {
    fmt::print("| {} | {} | {} | {:.3f} | {:.3f} |\n", what, ds4::serving::cache_source_name(t.result.usage.cache),
               t.result.usage.cached_tokens, t.seconds, t.seconds / cold);
  };
  row("live", live);
  row("warm (RAM)", warm);
  row("disk", disk);
  row("disk after restart", restart);

  // Write amplification: two interleaved agent conversations, one turn each in turn.
  {
    for (auto& e : fs::directory_iterator(dir)) fs::remove(e.path());
    ds4::serving::Metrics m2;
    ds4::serving::ServiceConfig c;
    c.hot_bytes = uint64_t(8) << 30;
    c.cache_dir = dir;
    c.disk_bytes = uint64_t(64) << 30;
    c.checkpoint_min_tokens = 1;
    ds4::serving::Service s(c, m2);
    s.set_backend(backend);
    std::vector<Token> conv[2] = {random_tokens(rng, o.tokens / 2, vocab), random_tokens(rng, o.tokens / 2, vocab)};
    double before = 0;
    fmt::print("\nWrite amplification, two interleaved conversations ({} turns each, {} new tokens per turn):\n\n",
               o.turns, o.turn_tokens);
    fmt::print(
        "| turn | conversation | prompt tokens | source | checkpoint bytes written | ÷ state bytes "
        "|\n|---|---|---|---|---|---|\n");
    double total = 0;
    uint64_t state_bytes = 0;
    for (uint32_t turn = 0; turn < 2 * o.turns; turn++) {
      auto& p = conv[turn % 2];
      const auto t = first_token(s, p, o.turn_tokens);
      p.insert(p.end(), t.result.completion.begin(), t.result.completion.end());
      auto more = random_tokens(rng, o.turn_tokens, vocab);
      p.insert(p.end(), more.begin(), more.end());
      const double now = written_bytes(m2);
      for (auto& e : fs::directory_iterator(dir))
        state_bytes = std::max<uint64_t>(state_bytes, fs::file_size(e.path()));
      fmt::print("| {} | {} | {} | {} | {:.0f} | {:.2f} |\n", turn + 1, "AB"[turn % 2], t.result.usage.prompt_tokens,
                 ds4::serving::cache_source_name(t.result.usage.cache), now - before,
                 state_bytes ? (now - before) / double(state_bytes) : 0.0);
      total += now - before;
      before = now;
    }
    s.stop(std::chrono::milliseconds(0));
    const double at_stop = written_bytes(m2);
    fmt::print("\nper turn: {:.0f} bytes ({:.2f} states); shutdown wrote {:.0f} more\n", total / (2 * o.turns),
               state_bytes ? total / (2 * o.turns) / double(state_bytes) : 0.0, at_stop - before);
  }
  return 0;
}

ds4ctl::Register reg{
    "bench-cache", "Measure checkpoint GB/s against the disk, TTFT cold/live/warm/disk/restart, write amplification",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto o = std::make_shared<CacheBenchOptions>();
      sub.add_option("-m,--model", o->model_path, "GGUF model file")->required()->check(CLI::ExistingFile);
      sub.add_option("--dir", o->dir, "Checkpoint directory to measure (default: a temporary one, removed)");
      sub.add_option("-t,--threads", o->threads, "Worker threads; 0 uses every core")->capture_default_str();
      sub.add_option("--tokens", o->tokens, "Prompt length for the TTFT rows")
          ->capture_default_str()
          ->check(CLI::Range(16u, 1u << 20));
      sub.add_option("--shared", o->shared, "Fraction of the prompt shared with the earlier one")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 0.99));
      sub.add_option("--state-mib", o->state_mib, "Synthetic checkpoint state size")
          ->capture_default_str()
          ->check(CLI::Range(1u, 8192u));
      sub.add_option("--turns", o->turns, "Turns per conversation in the write-amplification run")
          ->capture_default_str()
          ->check(CLI::Range(1u, 1000u));
      sub.add_option("--turn-tokens", o->turn_tokens, "Sampled and new tokens per turn")
          ->capture_default_str()
          ->check(CLI::Range(1u, 4096u));
      return [o] { return run_bench_cache(*o); };
    }};

}  // namespace
