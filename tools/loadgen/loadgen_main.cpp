// ds4d-load: drives N concurrent streaming chat clients against a ds4d on loopback for a bounded
// time and reports completed, refused and — the number that must be zero — dropped requests, TTFT
// and inter-token latency percentiles, and the daemon's RSS growth (tools/loadgen/README.md).
// Only loopback addresses are accepted; every request has one absolute deadline, and one past it
// is "hung" and fails the run. Exit status: 0 when nothing was dropped or hung (and the optional
// bounds hold), 1 otherwise, 2 on bad usage. Side clients, --spawn and the invariants:
// tools/loadgen/README.md §side-clients-spawning-invariants.
#include <CLI/CLI.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include "tools/loadgen/child_process.hpp"
#include "tools/loadgen/load_stats.hpp"
#include "tools/loadgen/stream_client.hpp"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace json = boost::json;
using net::ip::tcp;
using Clock = std::chrono::steady_clock;
using namespace ds4::load;

namespace {

struct Options {
  std::string host = "127.0.0.1";
  unsigned port = 0;
  unsigned clients = 8;
  double duration_s = 60;
  double warmup_s = 60;
  unsigned max_tokens = 16;
  std::string prompt = "Write one sentence about the sea.";
  std::string target = "/v1/chat/completions";
  bool no_stream = false;
  double request_timeout_s = 120;
  double rss_interval_s = 10;
  unsigned backoff_ms = 250;
  int pid = 0;
  std::vector<std::string> side;
  std::vector<std::string> spawn;
  std::string daemon_log;
  double startup_timeout_s = 300;
  std::string json_path;
  double max_rss_growth = -1;
  uint64_t min_completed = 0;
  bool expect_drops = false;
};

bool is_loopback(const net::ip::address& a) {
  return a.is_loopback() || (a.is_v6() && a.to_v6().is_v4_mapped() &&
                             net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6()).is_loopback());
}

// GET /health once; the status, or 0 when the daemon did not answer.
unsigned health_status(const tcp::endpoint& ep, const std::string& host_header) {
  try {
    net::io_context ioc;
    beast::tcp_stream s(ioc);
    s.expires_after(std::chrono::seconds(5));
    s.connect(ep);
    bhttp::request<bhttp::empty_body> req{bhttp::verb::get, "/health", 11};
    req.set(bhttp::field::host, host_header);
    bhttp::write(s, req);
    beast::flat_buffer b;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(s, b, res);
    return res.result_int();
  } catch (const std::exception&) {
    return 0;
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The side client's summary: the last line of its stdout that parses as a JSON object.
void parse_side_summary(const std::string& out, SideResult& r) {
  std::istringstream lines(out);
  std::string line, last;
  while (std::getline(lines, line))
    if (!line.empty() && line.front() == '{') last = line;
  if (last.empty()) {
    r.error = "printed no JSON summary";
    return;
  }
  try {
    const json::object o = json::parse(last).as_object();
    auto num = [&](const char* k) -> uint64_t {
      const auto* v = o.if_contains(k);
      return v && v->is_number() ? v->to_number<uint64_t>() : 0;
    };
    if (const auto* c = o.if_contains("client"); c && c->is_string()) r.client = c->as_string().c_str();
    r.completed = num("completed");
    r.dropped = num("dropped");
    r.requests = num("requests");
    r.connections = num("connections");
    if (const auto* d = o.if_contains("drops"); d && d->is_array())
      for (const auto& e : d->as_array())
        if (e.is_string()) r.drops.emplace_back(e.as_string().c_str());
    if (const auto* s = o.if_contains("statuses"); s && s->is_object())
      for (const auto& [k, v] : s->as_object())
        r.statuses[static_cast<unsigned>(std::stoul(std::string(k)))] += v.to_number<uint64_t>();
  } catch (const std::exception& e) {
    r.error = std::string("summary is not valid JSON: ") + e.what();
  }
}

std::string fmt_percent(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.2f %%", v);
  return b;
}

std::string statuses_text(const std::map<unsigned, uint64_t>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : " ") + std::to_string(k) + ":" + std::to_string(v);
  return s.empty() ? "-" : s;
}

json::object statuses_json(const std::map<unsigned, uint64_t>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[std::to_string(k)] = v;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"ds4d-load: concurrent streaming clients against a ds4d on loopback (see tools/loadgen/README.md)"};
  app.add_option("--host", o.host, "daemon address (loopback only)")->capture_default_str();
  app.add_option("--port", o.port, "daemon port (with --spawn: 0 = read it from the daemon's log)");
  app.add_option("-c,--clients", o.clients, "concurrent streaming clients")
      ->capture_default_str()
      ->check(CLI::Range(1u, 4096u));
  app.add_option("-d,--duration", o.duration_s, "seconds during which new requests start")->capture_default_str();
  app.add_option("--warmup", o.warmup_s, "seconds before the RSS baseline is taken")->capture_default_str();
  app.add_option("--max-tokens", o.max_tokens, "max_tokens of each request")->capture_default_str();
  app.add_option("--prompt", o.prompt, "user message of each request")->capture_default_str();
  app.add_option("--target", o.target, "endpoint path")->capture_default_str();
  app.add_flag("--no-stream", o.no_stream, "send stream:false requests");
  app.add_option("--request-timeout", o.request_timeout_s, "seconds a request may take before it counts as hung")
      ->capture_default_str();
  app.add_option("--rss-interval", o.rss_interval_s, "seconds between RSS samples and progress lines")
      ->capture_default_str();
  app.add_option("--backoff-ms", o.backoff_ms, "pause after a 429/503, jittered ±50 %")->capture_default_str();
  app.add_option("--pid", o.pid, "daemon process whose RSS to sample (implied by --spawn)");
  app.add_option("--side", o.side, "an external keep-alive client command (sh -c), repeatable");
  app.add_option("--daemon-log", o.daemon_log, "with --spawn: file for the daemon's stderr (default: a temp file)");
  app.add_option("--startup-timeout", o.startup_timeout_s, "with --spawn: seconds to wait for /health 200")
      ->capture_default_str();
  app.add_option("--json", o.json_path, "also write the report as JSON to this file");
  app.add_option("--max-rss-growth", o.max_rss_growth, "fail when RSS grows more than this many percent after warm-up");
  app.add_option("--min-completed", o.min_completed, "fail when fewer requests completed");
  app.add_flag("--expect-drops", o.expect_drops,
               "fault runs: drops are expected (the daemon is killed); hangs still fail");
  bool spawn_flag = false;
  app.add_flag("--spawn", spawn_flag, "start the daemon command given after `--`");
  app.add_option("daemon", o.spawn, "with --spawn: the daemon command line (after `--`)");
  CLI11_PARSE(app, argc, argv);
  const bool spawn = spawn_flag;
  if (spawn == o.spawn.empty()) {
    std::cerr << "ds4d-load: --spawn needs a daemon command after `--` (and a command needs --spawn)\n";
    return 2;
  }
  boost::system::error_code aec;
  const auto address = net::ip::make_address(o.host == "localhost" ? "127.0.0.1" : o.host, aec);
  if (aec || !is_loopback(address)) {
    std::cerr << "ds4d-load: refusing " << o.host << ": load runs only against loopback addresses\n";
    return 2;
  }
  if (!spawn && o.port == 0) {
    std::cerr << "ds4d-load: --port is required without --spawn\n";
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);

  // --- the daemon -------------------------------------------------------------------------
  pid_t daemon_pid = o.pid;
  if (spawn) {
    if (o.daemon_log.empty()) o.daemon_log = "/tmp/ds4d-load-daemon-" + std::to_string(getpid()) + ".log";
    try {
      daemon_pid = spawn_child(o.spawn, {}, false, o.daemon_log).pid;
    } catch (const std::exception& e) {
      std::cerr << "ds4d-load: " << e.what() << "\n";
      return 2;
    }
    std::cout << "daemon: pid " << daemon_pid << ", log " << o.daemon_log << std::endl;
  }
  auto stop_daemon = [&]() -> std::string {
    if (!spawn) return "";
    kill(daemon_pid, SIGTERM);
    auto st = wait_child(daemon_pid, std::chrono::seconds(90));
    if (!st) {
      kill(daemon_pid, SIGKILL);
      st = wait_child(daemon_pid, std::chrono::seconds(10));
      return "did not stop within 90 s of SIGTERM (killed)";
    }
    return "exit status " + std::to_string(*st) + " after SIGTERM";
  };
  const auto startup_deadline = Clock::now() + std::chrono::duration<double>(o.startup_timeout_s);
  if (spawn && o.port == 0) {
    const std::regex re(R"(listening on 127\.0\.0\.1:(\d+))");
    while (o.port == 0 && Clock::now() < startup_deadline) {
      std::smatch m;
      const std::string log = read_text(o.daemon_log);
      if (std::regex_search(log, m, re)) o.port = static_cast<unsigned>(std::stoul(m[1].str()));
      else if (wait_child(daemon_pid, std::chrono::milliseconds(100))) {
        std::cerr << "ds4d-load: the daemon exited during startup; its log:\n" << log;
        return 1;
      }
    }
    if (o.port == 0) {
      std::cerr << "ds4d-load: no 'listening on 127.0.0.1:PORT' in " << o.daemon_log << "\n";
      stop_daemon();
      return 1;
    }
  }
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(o.port));
  const std::string host_header =
      (address.is_v6() ? "[" + address.to_string() + "]" : address.to_string()) + ":" + std::to_string(o.port);
  if (spawn) {
    unsigned st = 0;
    while ((st = health_status(endpoint, host_header)) != 200 && Clock::now() < startup_deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (st != 200) {
      std::cerr << "ds4d-load: /health did not answer 200 within " << o.startup_timeout_s << " s (last " << st << ")\n";
      stop_daemon();
      return 1;
    }
  }

  // --- the run ----------------------------------------------------------------------------
  json::object body{{"model", "ds4d"},
                    {"messages", json::array{json::object{{"role", "user"}, {"content", o.prompt}}}},
                    {"max_tokens", o.max_tokens},
                    {"stream", !o.no_stream}};
  ClientPlan plan;
  plan.endpoint = endpoint;
  plan.host_header = host_header;
  plan.target = o.target;
  plan.body = json::serialize(body);
  plan.stream = !o.no_stream;
  plan.request_timeout = std::chrono::milliseconds(static_cast<long>(o.request_timeout_s * 1000));
  plan.refusal_backoff = std::chrono::milliseconds(o.backoff_ms);
  const auto start = Clock::now();
  plan.deadline = start + std::chrono::milliseconds(static_cast<long>(o.duration_s * 1000));
  std::cout << "ds4d-load: " << o.clients << " " << (plan.stream ? "streaming" : "non-streaming") << " clients, "
            << o.duration_s << " s, POST " << o.target << " max_tokens " << o.max_tokens << " on " << host_header
            << (o.side.empty() ? "" : ", " + std::to_string(o.side.size()) + " side clients") << std::endl;

  net::io_context ioc;
  std::vector<ClientCounters> per_client(o.clients);
  size_t live = o.clients;
  for (unsigned i = 0; i < o.clients; ++i) {
    net::co_spawn(ioc, run_stream_client(plan, per_client[i], 1234u + i), [&live](std::exception_ptr) { --live; });
  }

  // External clients: their stdout is read on the same io_context.
  struct Side {
    Child child;
    std::string out;
    std::unique_ptr<net::posix::stream_descriptor> pipe;
    SideResult result;
  };
  std::vector<std::unique_ptr<Side>> sides;
  const std::string url = "http://" + host_header;
  const long budget = static_cast<long>(o.duration_s);
  for (const auto& cmd : o.side) {
    auto s = std::make_unique<Side>();
    s->result.command = cmd;
    try {
      s->child = spawn_child({"/bin/sh", "-c", cmd},
                             {{"DS4D_LOAD_URL", url},
                              {"DS4D_LOAD_SECONDS", std::to_string(budget)},
                              {"DS4D_LOAD_MAX_TOKENS", std::to_string(o.max_tokens)},
                              {"DS4D_LOAD_TIMEOUT", std::to_string(static_cast<long>(o.request_timeout_s))}},
                             true, "");
    } catch (const std::exception& e) {
      s->result.error = e.what();
      sides.push_back(std::move(s));
      continue;
    }
    s->pipe = std::make_unique<net::posix::stream_descriptor>(ioc, s->child.stdout_fd);
    net::co_spawn(
        ioc,
        [p = s.get()]() -> net::awaitable<void> {
          char buf[4096];
          for (;;) {
            auto [ec, n] = co_await p->pipe->async_read_some(net::buffer(buf), net::as_tuple(net::use_awaitable));
            p->out.append(buf, n);
            if (ec) break;
          }
        },
        net::detached);
    sides.push_back(std::move(s));
  }

  // Progress and RSS, every rss_interval, until the streaming clients are done.
  std::vector<RssSample> rss;
  auto sample = [&] {
    ClientCounters now;
    for (const auto& c : per_client) now.merge(c);
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("t=%6.0fs  completed %-6llu 429 %-6llu 503 %-6llu dropped %-4llu tokens %-7llu", t,
                static_cast<unsigned long long>(now.completed), static_cast<unsigned long long>(now.status_429),
                static_cast<unsigned long long>(now.status_503), static_cast<unsigned long long>(now.dropped),
                static_cast<unsigned long long>(now.tokens));
    if (daemon_pid > 0) {
      const ResidentMemory m = read_resident_memory(daemon_pid);
      rss.push_back({t, m.rss_kib, m.anon_kib});
      std::printf("  rss %.1f MiB (anon %.1f)", static_cast<double>(m.rss_kib) / 1024.0,
                  static_cast<double>(m.anon_kib) / 1024.0);
    }
    std::printf("\n");
    std::fflush(stdout);
  };
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        net::steady_timer timer(co_await net::this_coro::executor);
        auto next = start;
        sample();
        while (live > 0) {
          next += std::chrono::milliseconds(static_cast<long>(o.rss_interval_s * 1000));
          // Wake at least every 100 ms to notice the end of the run promptly.
          while (live > 0 && Clock::now() < next) {
            timer.expires_after(std::min<Clock::duration>(next - Clock::now(), std::chrono::milliseconds(100)));
            co_await timer.async_wait(net::as_tuple(net::use_awaitable));
          }
          sample();
        }
      },
      net::detached);

  // The side clients get their budget plus the request timeout and 30 s; then they are killed.
  const auto side_limit =
      start + std::chrono::milliseconds(static_cast<long>((o.duration_s + o.request_timeout_s + 30) * 1000));
  std::thread side_waiter([&] {
    for (auto& s : sides) {
      if (s->child.pid <= 0) continue;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(side_limit - Clock::now());
      auto st = wait_child(s->child.pid, std::max(left, std::chrono::milliseconds(0)));
      if (!st) {
        kill(-s->child.pid, SIGKILL);
        wait_child(s->child.pid, std::chrono::seconds(5));
        s->result.exit_status = -1;
      } else {
        s->result.exit_status = *st;
      }
    }
  });
  ioc.run();
  side_waiter.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string daemon_exit = stop_daemon();

  // --- the report -------------------------------------------------------------------------
  ClientCounters all;
  for (const auto& c : per_client) all.merge(c);
  for (auto& s : sides) {
    if (s->result.error.empty()) parse_side_summary(s->out, s->result);
  }
  const std::optional<double> growth = rss_growth_percent(rss, o.warmup_s);
  const std::optional<double> anon_growth = rss_growth_percent(rss, o.warmup_s, &RssSample::anon_kib);
  uint64_t rss_max = 0, rss_base = 0, anon_base = 0, anon_max = 0;
  for (const auto& s : rss) {
    if (s.t_s + 1e-9 >= o.warmup_s && rss_base == 0) rss_base = s.rss_kib, anon_base = s.anon_kib;
    rss_max = std::max(rss_max, s.rss_kib);
    anon_max = std::max(anon_max, s.anon_kib);
  }
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("\n== ds4d-load report: %u clients, %.0f s (%.1f s with the last responses) ==\n", o.clients,
              o.duration_s, elapsed);
  std::printf("requests sent         %llu on %llu connections (%llu connect errors)\n", u(all.sent), u(all.connections),
              u(all.connect_errors));
  std::printf("completed             %llu  (%.2f/s)\n", u(all.completed), static_cast<double>(all.completed) / elapsed);
  std::printf("refused 429 / 503     %llu / %llu\n", u(all.status_429), u(all.status_503));
  std::printf("other statuses        %llu  [%s]\n", u(all.other_status), statuses_text(all.statuses).c_str());
  std::printf("dropped responses     %llu  (hung past %.0f s: %llu)\n", u(all.dropped), o.request_timeout_s,
              u(all.hung));
  for (const auto& e : all.drop_examples) std::printf("  e.g. %s\n", e.c_str());
  std::printf("TTFT ms               p50 %.1f  p99 %.1f  (n=%zu)\n", percentile(all.ttft_ms, 50),
              percentile(all.ttft_ms, 99), all.ttft_ms.size());
  std::printf("inter-token ms        p50 %.1f  p99 %.1f  (n=%zu)\n", percentile(all.itl_ms, 50),
              percentile(all.itl_ms, 99), all.itl_ms.size());
  std::printf("tokens streamed       %llu  (%.2f tok/s)\n", u(all.tokens), static_cast<double>(all.tokens) / elapsed);
  if (!rss.empty()) {
    const std::string growth_text = growth ? fmt_percent(*growth) : "n/a (fewer than 2 samples after warm-up)";
    std::printf("daemon RSS            baseline %.1f MiB (t >= %.0f s), last %.1f MiB, max %.1f MiB, growth %s\n",
                rss_base / 1024.0, o.warmup_s, rss.back().rss_kib / 1024.0, rss_max / 1024.0, growth_text.c_str());
    const std::string anon_text = anon_growth ? fmt_percent(*anon_growth) : "n/a";
    std::printf("daemon RssAnon        baseline %.1f MiB, last %.1f MiB, max %.1f MiB, growth %s\n", anon_base / 1024.0,
                rss.back().anon_kib / 1024.0, anon_max / 1024.0, anon_text.c_str());
  }
  bool side_ok = true;
  for (const auto& s : sides) {
    const auto& r = s->result;
    const bool ok = r.error.empty() && r.exit_status == 0 && (r.dropped == 0 || o.expect_drops);
    side_ok = side_ok && ok;
    std::printf("side %-18s completed %-5llu dropped %-3llu requests %-5llu connections %-4llu [%s] exit %d%s%s\n",
                r.client.empty() ? "?" : r.client.c_str(), u(r.completed), u(r.dropped), u(r.requests),
                u(r.connections), statuses_text(r.statuses).c_str(), r.exit_status,
                r.error.empty() ? "" : "  ERROR: ", r.error.c_str());
    for (const auto& e : r.drops) std::printf("  e.g. %s\n", e.c_str());
  }
  if (spawn) std::printf("daemon                %s\n", daemon_exit.c_str());

  std::vector<std::string> failures;
  if (all.hung > 0) failures.push_back(std::to_string(all.hung) + " requests hung");
  if (all.dropped > 0 && !o.expect_drops) failures.push_back(std::to_string(all.dropped) + " responses dropped");
  if (!side_ok) failures.push_back("a side client failed or dropped responses");
  if (o.max_rss_growth >= 0 && !growth)
    failures.push_back("RSS growth not measured (fewer than 2 samples after warm-up)");
  if (o.max_rss_growth >= 0 && growth && *growth > o.max_rss_growth)
    failures.push_back("RSS grew " + fmt_percent(*growth) + " after warm-up (limit " + fmt_percent(o.max_rss_growth) +
                       ")");
  if (all.completed < o.min_completed)
    failures.push_back("only " + std::to_string(all.completed) + " completed (need " + std::to_string(o.min_completed) +
                       ")");
  std::printf("verdict               %s\n", failures.empty() ? "PASS" : "FAIL");
  for (const auto& f : failures) std::printf("  %s\n", f.c_str());

  if (!o.json_path.empty()) {
    json::array rss_json, side_json;
    for (const auto& s : rss)
      rss_json.push_back(json::object{{"t_s", s.t_s}, {"rss_kib", s.rss_kib}, {"anon_kib", s.anon_kib}});
    for (const auto& s : sides) {
      const auto& r = s->result;
      side_json.push_back(json::object{{"client", r.client},
                                       {"command", r.command},
                                       {"exit", r.exit_status},
                                       {"completed", r.completed},
                                       {"dropped", r.dropped},
                                       {"requests", r.requests},
                                       {"connections", r.connections},
                                       {"statuses", statuses_json(r.statuses)},
                                       {"drops", json::value_from(r.drops)},
                                       {"error", r.error}});
    }
    json::object report{{"clients", o.clients},
                        {"duration_s", o.duration_s},
                        {"elapsed_s", elapsed},
                        {"max_tokens", o.max_tokens},
                        {"sent", all.sent},
                        {"completed", all.completed},
                        {"status_429", all.status_429},
                        {"status_503", all.status_503},
                        {"other_status", all.other_status},
                        {"statuses", statuses_json(all.statuses)},
                        {"dropped", all.dropped},
                        {"hung", all.hung},
                        {"connections", all.connections},
                        {"connect_errors", all.connect_errors},
                        {"tokens", all.tokens},
                        {"ttft_ms_p50", percentile(all.ttft_ms, 50)},
                        {"ttft_ms_p99", percentile(all.ttft_ms, 99)},
                        {"itl_ms_p50", percentile(all.itl_ms, 50)},
                        {"itl_ms_p99", percentile(all.itl_ms, 99)},
                        {"rss", rss_json},
                        {"rss_growth_percent", growth ? json::value(*growth) : json::value(nullptr)},
                        {"anon_growth_percent", anon_growth ? json::value(*anon_growth) : json::value(nullptr)},
                        {"side", side_json},
                        {"pass", failures.empty()}};
    std::ofstream(o.json_path) << json::serialize(report) << "\n";
  }
  return failures.empty() ? 0 : 1;
}
