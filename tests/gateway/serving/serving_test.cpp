// The serving layer without HTTP: stop-string filtering, the Prometheus text format, and the
// engine worker's prefix reuse, limits, deadlines and refusals, on the scripted backend.
#include <gtest/gtest.h>

#include <future>

#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "gateway/serving/stop_sequence_filter.hpp"
#include "tests/gateway/scripted_backend.hpp"

namespace ds4::test {
namespace {

using serving::StopSequenceFilter;

std::string feed_all(StopSequenceFilter& f, const std::vector<std::string>& pieces, bool* stopped) {
  std::string out;
  *stopped = false;
  for (const auto& p : pieces) {
    auto r = f.push(p);
    out += r.release;
    if (r.stopped) {
      *stopped = true;
      return out;
    }
  }
  return out + f.flush();
}

TEST(StopSequenceFilter, FindsStopAcrossPiecesAndReleasesOnlyWhatPrecedesIt) {
  StopSequenceFilter f({"END", "xy"});
  bool stopped;
  EXPECT_EQ(feed_all(f, {"ab", "cE", "N", "Dzz"}, &stopped), "abc");
  EXPECT_TRUE(stopped);
}

TEST(StopSequenceFilter, HoldsPossiblePrefixesAndFlushesThemWithoutAMatch) {
  StopSequenceFilter f({"END"});
  auto r = f.push("abEN");
  EXPECT_EQ(r.release, "ab");  // "EN" may still become END
  r = f.push("x");
  EXPECT_EQ(r.release, "ENx");
  r = f.push("E");
  EXPECT_EQ(r.release, "");
  EXPECT_EQ(f.flush(), "E");
}

TEST(StopSequenceFilter, EarliestStopWinsAndEmptyStopsAreIgnored) {
  StopSequenceFilter f({"", "cd", "bcde"});
  auto r = f.push("abcdef");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.release, "a");
  StopSequenceFilter none({});
  EXPECT_EQ(none.push("anything").release, "anything");
}

TEST(PrometheusRegistry, RendersTheTextFormat) {
  serving::PrometheusRegistry reg;
  auto& c = reg.counter("t_requests_total", "Requests.", {"path", "code"});
  auto& g = reg.gauge("t_depth", "Depth \\ with backslash.");
  auto& h = reg.histogram("t_latency_seconds", "Latency.", {0.1, 1});
  c.add({"/a\"b", "200"}, 2);
  c.add({"/a\"b", "200"}, 1);
  g.set({}, 2.5);
  h.observe({}, 0.05);
  h.observe({}, 0.5);
  h.observe({}, 7);
  EXPECT_EQ(reg.render(),
            "# HELP t_requests_total Requests.\n"
            "# TYPE t_requests_total counter\n"
            "t_requests_total{path=\"/a\\\"b\",code=\"200\"} 3\n"
            "# HELP t_depth Depth \\\\ with backslash.\n"
            "# TYPE t_depth gauge\n"
            "t_depth 2.5\n"
            "# HELP t_latency_seconds Latency.\n"
            "# TYPE t_latency_seconds histogram\n"
            "t_latency_seconds_bucket{le=\"0.1\"} 1\n"
            "t_latency_seconds_bucket{le=\"1\"} 2\n"
            "t_latency_seconds_bucket{le=\"+Inf\"} 3\n"
            "t_latency_seconds_sum 7.55\n"
            "t_latency_seconds_count 3\n");
  EXPECT_THROW(c.add({"/x", "200"}, -1), std::invalid_argument);
  EXPECT_THROW(c.add({"/x"}, 1), std::invalid_argument);
  EXPECT_THROW(reg.gauge("t_depth", "again"), std::invalid_argument);
}

TEST(Metrics, EveryNameHasThePrefixAndCountersEndInTotal) {
  serving::Metrics m;
  std::string text = m.render();
  size_t pos = 0;
  int families = 0;
  while ((pos = text.find("# TYPE ", pos)) != std::string::npos) {
    size_t end = text.find('\n', pos);
    std::string line = text.substr(pos + 7, end - pos - 7);
    std::string name = line.substr(0, line.find(' '));
    std::string type = line.substr(line.find(' ') + 1);
    EXPECT_EQ(name.rfind("ds4d_", 0), 0u) << name;
    if (type == "counter") {
      EXPECT_TRUE(name.ends_with("_total")) << name;
    }
    if (type == "histogram") {
      // A unit, or what is counted (the batch size counts sessions).
      EXPECT_TRUE(name.ends_with("_seconds") || name.ends_with("_per_second") || name.ends_with("_sequences")) << name;
    }
    ++families;
    pos = end;
  }
  EXPECT_GE(families, 20);
}

// Collects what the worker reports.
struct RecordingSink : serving::GenerationSink {
  std::string text;
  std::promise<serving::GenerationResult> done;
  serving::GenerationUsage prefilled;
  int stop_after_bytes = -1;
  void on_prefilled(const serving::GenerationUsage& u) override { prefilled = u; }
  bool on_text(std::string_view bytes) override {
    text += bytes;
    return stop_after_bytes < 0 || static_cast<int>(text.size()) < stop_after_bytes;
  }
  void on_finished(const serving::GenerationResult& r) override { done.set_value(r); }
};

struct ServiceHarness {
  serving::Metrics metrics;
  serving::Service service{{}, metrics};
  std::shared_ptr<ScriptedBackend> backend = std::make_shared<ScriptedBackend>("Hello there", 64);
  ServiceHarness() { service.set_backend(backend); }
  ~ServiceHarness() { service.stop(std::chrono::milliseconds(0)); }

  std::pair<serving::GenerationResult, std::string> run(std::string prompt, size_t max_tokens = 0,
                                                        std::vector<std::string> stop = {}, int stop_after = -1) {
    auto sink = std::make_shared<RecordingSink>();
    sink->stop_after_bytes = stop_after;
    serving::GenerationJob job;
    job.prompt = backend->encode(prompt);
    job.max_tokens = max_tokens;
    job.stop = std::move(stop);
    job.sink = sink;
    auto fut = sink->done.get_future();
    EXPECT_FALSE(service.submit(std::move(job)).has_value());
    auto r = fut.get();
    return {r, sink->text};
  }
};

TEST(Service, GeneratesUntilEosAndReusesALivePrefix) {
  ServiceHarness h;
  auto [r1, t1] = h.run("question one ");
  EXPECT_EQ(t1, "Hello there");
  EXPECT_EQ(r1.finish, serving::FinishReason::Eos);
  EXPECT_EQ(r1.usage.cache, serving::CacheOutcome::Cold);
  EXPECT_EQ(r1.usage.completion_tokens, 11u);
  // The live context is the prompt plus every sampled token (EOS is never fed).
  EXPECT_EQ(h.service.live_tokens(), std::string("question one Hello there").size());
  auto [r2, t2] = h.run("question one Hello there, and two ");
  EXPECT_EQ(r2.usage.cache, serving::CacheOutcome::Live);
  EXPECT_EQ(r2.usage.cached_tokens, std::string("question one Hello there").size());
  // A prompt that diverges from the live context is prefilled from scratch.
  long before = h.backend->prefilled_tokens;
  auto [r3, t3] = h.run("something else ");
  EXPECT_EQ(r3.usage.cache, serving::CacheOutcome::Miss);
  EXPECT_EQ(r3.usage.cached_tokens, 0u);
  EXPECT_EQ(h.backend->prefilled_tokens - before, static_cast<long>(std::string("something else ").size()));
}

TEST(Service, MaxTokensStopStringsAndConsumerStop) {
  ServiceHarness h;
  auto [r1, t1] = h.run("p1 ", 4);
  EXPECT_EQ(t1, "Hell");
  EXPECT_EQ(r1.finish, serving::FinishReason::MaxTokens);
  auto [r2, t2] = h.run("p2 ", 0, {"lo "});
  EXPECT_EQ(t2, "Hel");
  EXPECT_EQ(r2.finish, serving::FinishReason::StopSequence);
  auto [r3, t3] = h.run("p3 ", 0, {}, 2);
  EXPECT_EQ(t3, "He");
  EXPECT_EQ(r3.finish, serving::FinishReason::ConsumerStop);
}

TEST(Service, ContextFullEndsWithContextFull) {
  ServiceHarness h;
  h.backend->endless = true;
  auto [r, t] = h.run(std::string(60, 'a'));
  EXPECT_EQ(r.finish, serving::FinishReason::ContextFull);
  EXPECT_EQ(r.usage.completion_tokens, 4u);
  auto [r2, t2] = h.run(std::string(64, 'b'));
  EXPECT_EQ(r2.finish, serving::FinishReason::Error);
  EXPECT_NE(r2.error.find("64 tokens"), std::string::npos);
}

TEST(Service, CancelledAndExpiredJobsDoNotRun) {
  ServiceHarness h;
  auto sink = std::make_shared<RecordingSink>();
  serving::GenerationJob job;
  job.prompt = {1, 2, 3};
  job.sink = sink;
  job.cancelled->store(true);
  auto fut = sink->done.get_future();
  ASSERT_FALSE(h.service.submit(std::move(job)));
  EXPECT_EQ(fut.get().finish, serving::FinishReason::Cancelled);
  auto sink2 = std::make_shared<RecordingSink>();
  serving::GenerationJob job2;
  job2.prompt = {1, 2, 3};
  job2.sink = sink2;
  job2.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto fut2 = sink2->done.get_future();
  ASSERT_FALSE(h.service.submit(std::move(job2)));
  EXPECT_EQ(fut2.get().finish, serving::FinishReason::Timeout);
  EXPECT_EQ(h.backend->appended_tokens, 0);
}

TEST(Service, RefusesWhileLoadingAndAfterStop) {
  serving::Metrics metrics;
  serving::Service service({}, metrics);
  serving::GenerationJob job;
  job.prompt = {1};
  job.sink = std::make_shared<RecordingSink>();
  auto refusal = service.submit(job);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->http_status, 503);
  EXPECT_EQ(refusal->code, "loading");
  service.set_backend(std::make_shared<ScriptedBackend>("x"));
  service.stop(std::chrono::milliseconds(0));
  refusal = service.submit(job);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->code, "shutting_down");
}

}  // namespace
}  // namespace ds4::test
