// Streaming, parallel, resumable conversion; see converter.hpp for the design.
#include "toolchain/convert/converter.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/quant/quant.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/imatrix_file.hpp"
#include "toolchain/convert/invariants.hpp"
#include "toolchain/convert/mtp_sidecar.hpp"
#include "toolchain/convert/official_formats.hpp"

namespace ds4::convert {

using quant::Type;
namespace fs = std::filesystem;

uint64_t peak_rss_bytes() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

std::vector<std::byte> quantize_rows(Type type, const float* src, uint64_t n_rows, uint64_t cols,
                                     const float* importance) {
  const uint64_t rb = quant::row_bytes(type, cols);
  std::vector<std::byte> out(rb * n_rows);
  const quant::Traits& tr = quant::traits(type);
  if (!tr.quantize)
    throw std::invalid_argument("quantize_rows: type " + std::string(quant::type_info(type).name) +
                                " has no quantizer");
  for (uint64_t r = 0; r < n_rows; ++r)
    quant::quantize_row(type, src + r * cols, out.data() + r * rb, static_cast<int64_t>(cols), importance);
  return out;
}

std::vector<float> importance_from_imatrix(std::span<const float> values) {
  double sum = 0;
  for (const float v : values) sum += v;
  if (!(sum > 0)) return {};
  const float floor = static_cast<float>(1e-3 * sum / double(values.size()));
  std::vector<float> w(values.begin(), values.end());
  for (float& v : w) v = std::max(v, floor);
  return w;
}

Type recipe_type_for(const Recipe& r, const gguf::TensorRule& rule) { return r.type_for(rule); }

namespace {

// Up to this many elements per chunk (16 MiB of f32 scratch per thread); experts are one chunk
// per expert at most.
constexpr uint64_t kChunkElems = uint64_t{4} << 20;
constexpr uint64_t kSampleStride = 8;  // every 8th row of each chunk enters the audit

struct Chunk {
  uint64_t row0, rows;
};

std::vector<Chunk> chunks_of(const TargetPlan& t) {
  std::vector<Chunk> c;
  const uint64_t per_src = t.rows_per_source();
  uint64_t step = std::max<uint64_t>(1, kChunkElems / t.ne0());
  if (step >= 128) step -= step % 128;  // whole FP8 block rows
  for (uint64_t s = 0; s < t.weights.size(); ++s)
    for (uint64_t r = 0; r < per_src; r += step) c.push_back({s * per_src + r, std::min(step, per_src - r)});
  return c;
}

struct Stats {
  double sum_err2 = 0, sum_ref2 = 0, max_err = 0;
  uint64_t sampled = 0;
  void merge(const Stats& o) {
    sum_err2 += o.sum_err2, sum_ref2 += o.sum_ref2, max_err = std::max(max_err, o.max_err), sampled += o.sampled;
  }
};

// Decodes source rows [row0, row0+n) (within one source tensor) to f32.
void decode_rows(const TargetPlan& t, uint64_t src, uint64_t row0, uint64_t n, float* out) {
  const SourceTensor& w = *t.weights[src];
  const uint64_t ne0 = t.ne0();
  const auto* bytes = reinterpret_cast<const uint8_t*>(w.data);
  switch (t.kind) {
    case SourceKind::Fp8:
      decode_fp8_rows(bytes, reinterpret_cast<const uint8_t*>(t.scales[src]->data), ne0, row0, n, out);
      return;
    case SourceKind::Fp4Experts:
      decode_fp4_rows(bytes, reinterpret_cast<const uint8_t*>(t.scales[src]->data), ne0, row0, n, out);
      return;
    case SourceKind::Float: {
      const uint64_t e0 = row0 * ne0, cnt = n * ne0;
      if (w.dtype == Dtype::F32) std::memcpy(out, bytes + e0 * 4, cnt * 4);
      else quant::traits(w.dtype == Dtype::F16 ? Type::F16 : Type::BF16).dequantize(bytes + e0 * 2, out, int64_t(cnt));
      for (uint64_t i = 0; i < cnt; ++i)
        if (!std::isfinite(out[i])) throw std::runtime_error("non-finite value at element " + std::to_string(e0 + i));
      return;
    }
    case SourceKind::Ids: break;
  }
  throw std::logic_error("decode_rows on ids");
}

// Produces one chunk into `out` (chunk.rows * row_bytes), sampling rows into `st`.
// importance: per source tensor (expert) of t, the quantizer importance (importance_from_imatrix),
// empty for plain quantization; null when the target has none at all.
using TargetImportance = std::vector<std::vector<float>>;

void produce(const TargetPlan& t, const Chunk& c, std::vector<float>& f32, std::vector<float>& deq, uint8_t* out,
             uint32_t n_expert, const TargetImportance* importance, Stats& st) {
  const uint64_t ne0 = t.ne0(), rb = quant::row_bytes(t.type, ne0);
  const uint64_t per_src = t.rows_per_source(), src = c.row0 / per_src, local = c.row0 % per_src;
  if (t.kind == SourceKind::Ids) {
    const SourceTensor& w = *t.weights[0];
    for (uint64_t i = 0; i < c.rows * ne0; ++i) {
      const uint64_t e = (c.row0) * ne0 + i;
      int64_t v;
      if (w.dtype == Dtype::I64) std::memcpy(&v, w.data + e * 8, 8);
      else {
        int32_t x;
        std::memcpy(&x, w.data + e * 4, 4);
        v = x;
      }
      if (v < 0 || v >= int64_t(n_expert))
        throw std::runtime_error("expert id " + std::to_string(v) + " at element " + std::to_string(e) +
                                 " is outside 0.." + std::to_string(n_expert - 1));
      const int32_t o = static_cast<int32_t>(v);
      std::memcpy(out + i * 4, &o, 4);
    }
    return;
  }
  f32.resize(c.rows * ne0);
  decode_rows(t, src, local, c.rows, f32.data());
  const quant::Traits& tr = quant::traits(t.type);
  if (t.type == Type::MXFP4 && t.kind == SourceKind::Fp4Experts) {
    const auto* w = reinterpret_cast<const uint8_t*>(t.weights[src]->data);
    const auto* s = reinterpret_cast<const uint8_t*>(t.scales[src]->data);
    for (uint64_t r = 0; r < c.rows; ++r)
      repack_fp4_row_to_mxfp4(w + (local + r) * (ne0 / 2), s + (local + r) * (ne0 / 32), ne0, out + r * rb);
  } else {
    const float* imp = nullptr;
    if (importance) {
      const std::vector<float>& v = (*importance)[importance->size() == 1 ? 0 : src];
      if (!v.empty()) imp = v.data();
    }
    for (uint64_t r = 0; r < c.rows; ++r)
      quant::quantize_row(t.type, f32.data() + r * ne0, out + r * rb, int64_t(ne0), imp);
  }
  deq.resize(ne0);
  for (uint64_t r = 0; r < c.rows; r += kSampleStride) {
    tr.dequantize(out + r * rb, deq.data(), int64_t(ne0));
    const float* ref = f32.data() + r * ne0;
    for (uint64_t i = 0; i < ne0; ++i) {
      const double e = double(deq[i]) - double(ref[i]);
      st.sum_err2 += e * e;
      st.sum_ref2 += double(ref[i]) * ref[i];
      st.max_err = std::max(st.max_err, std::fabs(e));
    }
    st.sampled += ne0;
  }
}

std::string hex64(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

// OUT.journal: "ds4-convert-journal 1 <header hash>" then one line per finished tensor:
// "<index> <xxh3 of its bytes> <sum_err2> <sum_ref2> <max_err> <sampled> <seconds>".
struct JournalEntry {
  std::string hash;
  Stats st;
  double seconds = 0;
};

std::map<size_t, JournalEntry> read_journal(const std::string& path, const std::string& header_hash) {
  std::map<size_t, JournalEntry> done;
  std::ifstream in(path);
  std::string magic, hh;
  int version = 0;
  if (!(in >> magic >> version >> hh) || magic != "ds4-convert-journal" || version != 1 || hh != header_hash)
    return done;
  size_t idx;
  JournalEntry e;
  while (in >> idx >> e.hash >> e.st.sum_err2 >> e.st.sum_ref2 >> e.st.max_err >> e.st.sampled >> e.seconds)
    done[idx] = e;
  return done;
}

struct OutFile {
  std::string path;
  int fd = -1;
  ~OutFile() {
    if (fd >= 0) ::close(fd);
  }
  void pwrite_all(const void* p, uint64_t n, uint64_t off) const {
    const auto* b = static_cast<const uint8_t*>(p);
    while (n > 0) {
      const ssize_t k = ::pwrite(fd, b, n, static_cast<off_t>(off));
      if (k < 0) {
        if (errno == EINTR) continue;
        throw ConvertError(path, "", std::string("write failed: ") + std::strerror(errno));
      }
      b += k, n -= uint64_t(k), off += uint64_t(k);
    }
  }
  uint64_t hash_range(uint64_t off, uint64_t n) const {
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    std::vector<uint8_t> buf(std::min<uint64_t>(n, 8u << 20));
    while (n > 0) {
      const uint64_t k = std::min<uint64_t>(n, buf.size());
      const ssize_t got = ::pread(fd, buf.data(), k, static_cast<off_t>(off));
      if (got <= 0) {
        XXH3_freeState(st);
        return 0;
      }
      XXH3_64bits_update(st, buf.data(), size_t(got));
      n -= uint64_t(got), off += uint64_t(got);
    }
    const uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
  }
};

struct WriteJob {
  std::string path;  // final path
  const std::vector<TargetPlan>* targets;
  const Checkpoint* ck;
  gguf::GgufWriter writer;  // metadata + tensor table (data written by us)
};

// Produces every tensor of one GGUF; returns per-tensor results.
std::vector<TensorResult> write_gguf(const WriteJob& job, const std::string& file_tag, const ConvertOptions& opt,
                                     uint32_t n_expert, const std::map<std::string, TargetImportance>& importance,
                                     Progress& prog, std::mutex& prog_mu, size_t& resumed) {
  const gguf::GgufWriter::Layout lay = job.writer.layout();
  const std::string header_hash = hex64(XXH3_64bits(lay.header.data(), lay.header.size()));
  const std::string partial = job.path + ".partial", journal = job.path + ".journal";
  std::map<size_t, JournalEntry> done;
  if (fs::exists(partial) && fs::exists(journal) && fs::file_size(partial) == lay.file_size)
    done = read_journal(journal, header_hash);
  OutFile out{partial};
  out.fd = ::open(partial.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (out.fd < 0) throw ConvertError(partial, "", std::string("cannot create: ") + std::strerror(errno));
  if (done.empty()) {
    if (::ftruncate(out.fd, 0) != 0 || ::ftruncate(out.fd, static_cast<off_t>(lay.file_size)) != 0)
      throw ConvertError(partial, "", std::string("cannot size the output: ") + std::strerror(errno));
    out.pwrite_all(lay.header.data(), lay.header.size(), 0);
    std::ofstream(journal, std::ios::trunc) << "ds4-convert-journal 1 " << header_hash << "\n";
  }
  std::ofstream jl(journal, std::ios::app);
  jl.precision(17);

  const std::vector<TargetPlan>& targets = *job.targets;
  std::vector<TensorResult> results;
  const unsigned nthreads = std::max(1u, opt.threads);
  for (size_t ti = 0; ti < targets.size(); ++ti) {
    const TargetPlan& t = targets[ti];
    TensorResult r;
    r.name = t.rule.name;
    r.file = file_tag;
    r.type = t.type;
    r.dims = t.rule.dims;
    r.layer = t.rule.layer;
    r.kind = t.kind;
    r.n_sources = t.weights.size();
    r.sources.push_back(t.weights.front()->name);
    if (t.weights.size() > 1) r.sources.push_back(t.weights.back()->name);
    r.elements = t.rows() * t.ne0();
    r.out_bytes = t.out_bytes();
    r.source_bytes = t.source_bytes();
    r.lossless = (t.type == Type::MXFP4 && t.kind == SourceKind::Fp4Experts) || t.kind == SourceKind::Ids;
    const auto imp_it = importance.find(t.rule.name);
    const TargetImportance* imp = nullptr;
    if (!r.lossless && imp_it != importance.end() && quant::traits(t.type).quantize_weighted) {
      imp = &imp_it->second;
      for (const auto& v : *imp) r.importance |= !v.empty();
      if (!r.importance) imp = nullptr;
    }
    const uint64_t base = lay.tensor_offsets[ti], rb = quant::row_bytes(t.type, t.ne0());

    if (auto it = done.find(ti); it != done.end() && hex64(out.hash_range(base, r.out_bytes)) == it->second.hash) {
      r.resumed = true;
      r.sum_err2 = it->second.st.sum_err2, r.sum_ref2 = it->second.st.sum_ref2, r.max_err = it->second.st.max_err;
      r.sampled = it->second.st.sampled, r.seconds = it->second.seconds;
      ++resumed;
      std::lock_guard<std::mutex> lk(prog_mu);
      prog.source_bytes_done += r.source_bytes;
      ++prog.tensors_done;
      results.push_back(std::move(r));
      continue;
    }

    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<Chunk> chunks = chunks_of(t);
    std::atomic<size_t> next{0};
    std::mutex mu;
    Stats total;
    std::exception_ptr failure;
    auto worker = [&] {
      std::vector<float> f32, deq;
      std::vector<uint8_t> buf;
      Stats st;
      try {
        for (size_t ci; (ci = next.fetch_add(1)) < chunks.size();) {
          const Chunk& c = chunks[ci];
          buf.resize(c.rows * rb);
          try {
            produce(t, c, f32, deq, buf.data(), n_expert, imp, st);
          } catch (const ConvertError&) {
            throw;
          } catch (const std::exception& e) {
            // Name the tensor whose bytes are bad: the scale for a NaN scale, else the weight.
            const size_t si = c.row0 / t.rows_per_source();
            const bool scale = std::string_view(e.what()).rfind("NaN scale", 0) == 0 && si < t.scales.size();
            const SourceTensor& src = scale ? *t.scales[si] : *t.weights[si];
            throw ConvertError(job.ck->shard_path(src), src.name, e.what());
          }
          out.pwrite_all(buf.data(), buf.size(), base + c.row0 * rb);
          std::lock_guard<std::mutex> lk(prog_mu);
          prog.source_bytes_done += t.source_bytes() * c.rows / t.rows();
          prog.current = t.rule.name;
          if (opt.progress) opt.progress(prog);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu);
        if (!failure) failure = std::current_exception();
        next = chunks.size();
      }
      std::lock_guard<std::mutex> lk(mu);
      total.merge(st);
    };
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < std::min<size_t>(nthreads, chunks.size()); ++i) pool.emplace_back(worker);
    worker();
    for (auto& th : pool) th.join();
    if (failure) std::rethrow_exception(failure);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.sum_err2 = total.sum_err2, r.sum_ref2 = total.sum_ref2, r.max_err = total.max_err, r.sampled = total.sampled;
    if (::fdatasync(out.fd) != 0)
      throw ConvertError(partial, "", std::string("fdatasync failed: ") + std::strerror(errno));
    jl << ti << ' ' << hex64(out.hash_range(base, r.out_bytes)) << ' ' << r.sum_err2 << ' ' << r.sum_ref2 << ' '
       << r.max_err << ' ' << r.sampled << ' ' << r.seconds << '\n';
    jl.flush();
    // Done with these source pages: keep RSS at one tensor's working set.
    for (const SourceTensor* s : t.weights) job.ck->release(*s);
    for (const SourceTensor* s : t.scales) job.ck->release(*s);
    {
      std::lock_guard<std::mutex> lk(prog_mu);
      ++prog.tensors_done;
      if (opt.progress) opt.progress(prog);
    }
    results.push_back(std::move(r));
  }
  if (::fsync(out.fd) != 0) throw ConvertError(partial, "", std::string("fsync failed: ") + std::strerror(errno));
  ::close(out.fd);
  out.fd = -1;
  jl.close();
  fs::rename(partial, job.path);
  fs::remove(journal);
  return results;
}

}  // namespace

ConvertResult convert_checkpoint(const ConvertOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const Recipe recipe = load_recipe(opt.recipe);
  const Checkpoint ck = Checkpoint::open(opt.source_dir);
  const OfficialConfig cfg = read_official_config(opt.source_dir);
  const ConvertPlan plan = make_plan(ck, cfg, recipe);

  ConvertResult res;
  res.output = opt.output;
  res.source_fingerprint = plan.source_fingerprint;
  res.recipe_name = recipe.name;
  res.recipe_canonical = recipe.canonical();
  std::map<std::string, TargetImportance> importance;
  if (!opt.imatrix.empty()) {
    const Imatrix im = read_imatrix(opt.imatrix);
    std::map<std::string, const TargetPlan*> by_name;
    for (const auto* v : {&plan.targets, &plan.mtp_targets})
      for (const TargetPlan& t : *v) by_name[t.rule.name] = &t;
    for (const ImatrixEntry& e : im.entries) {
      auto it = by_name.find(e.name);
      if (it == by_name.end()) throw ConvertError(opt.imatrix, e.name, "imatrix entry names no tensor of this model");
      const TargetPlan& t = *it->second;
      const uint64_t want = t.ne0() * (t.kind == SourceKind::Fp4Experts ? t.weights.size() : 1);
      if (e.values.size() != want)
        throw ConvertError(opt.imatrix, e.name,
                           "imatrix entry has " + std::to_string(e.values.size()) + " values, the tensor needs " +
                               std::to_string(want) + " (ne0 x experts)");
      TargetImportance& ti = importance[e.name];
      for (uint64_t k = 0; k < want / t.ne0(); ++k)
        ti.push_back(importance_from_imatrix(std::span<const float>(e.values).subspan(k * t.ne0(), t.ne0())));
    }
    res.imatrix_path = opt.imatrix;
    res.imatrix_hash = file_hash(opt.imatrix);
    res.imatrix_dataset = im.dataset;
    res.imatrix_entries = im.entries.size();
  }
  const std::string id_src = res.recipe_canonical + "imatrix=" + (res.imatrix_hash.empty() ? "none" : res.imatrix_hash);
  res.artifact_id = hex64(XXH3_64bits_withSeed(
      id_src.data(), id_src.size(), XXH3_64bits(plan.source_fingerprint.data(), plan.source_fingerprint.size())));
  res.skipped = plan.skipped;
  res.threads = std::max(1u, opt.threads);

  WriteJob job{opt.output, &plan.targets, &ck, {}};
  set_ds4_metadata(job.writer, cfg, "DeepSeek-V4-Flash " + recipe.name + " (ds4ctl convert)");
  job.writer.set("ds4d.convert.source_fingerprint", res.source_fingerprint);
  job.writer.set("ds4d.convert.artifact_id", res.artifact_id);
  job.writer.set("ds4d.convert.recipe", res.recipe_canonical);
  job.writer.set("ds4d.convert.imatrix_hash", res.imatrix_hash.empty() ? std::string("none") : res.imatrix_hash);
  if (!res.imatrix_hash.empty()) {  // the keys ds4's quantizer writes
    job.writer.set("quantize.imatrix.file", res.imatrix_path);
    job.writer.set("quantize.imatrix.dataset", res.imatrix_dataset);
    job.writer.set("quantize.imatrix.entries_count", static_cast<uint32_t>(res.imatrix_entries));
  }
  for (const TargetPlan& t : plan.targets)
    job.writer.add_tensor(t.rule.name, t.type, t.rule.dims, [](std::span<std::byte>) {});

  Progress prog;
  prog.tensors_total = plan.targets.size();
  for (const TargetPlan& t : plan.targets) prog.source_bytes_total += t.source_bytes();
  std::mutex prog_mu;
  for (const TargetPlan& t : plan.mtp_targets) prog.source_bytes_total += t.source_bytes();
  prog.tensors_total += plan.mtp_targets.size();
  res.tensors = write_gguf(job, "main", opt, cfg.dims.n_expert, importance, prog, prog_mu, res.resumed_tensors);
  if (!plan.mtp_targets.empty()) {
    res.sidecar = sidecar_path_for(opt.output);
    WriteJob side{res.sidecar, &plan.mtp_targets, &ck, {}};
    set_ds4_metadata(side.writer, cfg, "DeepSeek-V4-Flash MTP " + recipe.name + " (ds4ctl convert)", false);
    side.writer.set("ds4d.convert.role", "mtp");
    side.writer.set("ds4d.convert.source_fingerprint", res.source_fingerprint);
    side.writer.set("ds4d.convert.artifact_id", res.artifact_id);
    for (const TargetPlan& t : plan.mtp_targets)
      side.writer.add_tensor(t.rule.name, t.type, t.rule.dims, [](std::span<std::byte>) {});
    std::vector<TensorResult> mt =
        write_gguf(side, "mtp", opt, cfg.dims.n_expert, importance, prog, prog_mu, res.resumed_tensors);
    res.tensors.insert(res.tensors.end(), mt.begin(), mt.end());
  }
  for (const TensorResult& t : res.tensors) {
    res.source_bytes += t.source_bytes;
    res.imatrix_targets_covered += t.importance;
  }
  res.output_bytes = fs::file_size(opt.output) + (res.sidecar.empty() ? 0 : fs::file_size(res.sidecar));

  res.invariants = check_invariants(opt.output, cfg, plan);
  if (!res.sidecar.empty()) {
    Invariant inv{"mtp_sidecar", "", true};
    try {
      verify_sidecar(opt.output, res.sidecar);
      const gguf::GgufFile s = gguf::GgufFile::open(res.sidecar);
      inv.detail = std::to_string(s.tensors().size()) + " MTP tensors in " + fs::path(res.sidecar).filename().string() +
                   ", bound to fingerprint " + res.source_fingerprint;
    } catch (const std::exception& e) {
      inv.ok = false;
      inv.detail = e.what();
    }
    res.invariants.push_back(inv);
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.peak_rss_bytes = peak_rss_bytes();
  for (const Invariant& inv : res.invariants)
    if (!inv.ok) {
      fs::remove(opt.output);
      if (!res.sidecar.empty()) fs::remove(res.sidecar);
      throw ConvertError(opt.output, "", "invariant '" + inv.name + "' violated: " + inv.detail + " (output removed)");
    }
  return res;
}

}  // namespace ds4::convert
