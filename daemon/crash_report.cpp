// The fatal-signal report; see crash_report.hpp. The handler formats into a stack buffer with
// its own number printing (snprintf may allocate) and writes with write(2); backtrace(3) is
// called once at install so that its lazy load of libgcc_s does not happen inside the handler.
#include "daemon/crash_report.hpp"

#include <execinfo.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace ds4::daemon {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kMaxFrames = 64;
constexpr size_t kAltStackBytes = 64 * 1024;

bool g_journal = false;
alignas(16) char g_alt_stack[kAltStackBytes];

// A line assembled in place: text and numbers appended, written out whole.
struct Line {
  char buf[256];
  size_t n = 0;
  void text(const char* s) {
    while (*s != '\0' && n + 1 < sizeof buf) buf[n++] = *s++;
  }
  void number(uint64_t v, unsigned base) {
    char digits[24];
    size_t k = 0;
    do {
      digits[k++] = "0123456789abcdef"[v % base];
      v /= base;
    } while (v != 0);
    if (base == 16) text("0x");
    while (k > 0 && n + 1 < sizeof buf) buf[n++] = digits[--k];
  }
  void start() {
    n = 0;
    if (g_journal) text("<2>");
  }
  // Writes the line (with a newline when `newline`).
  void flush(bool newline = true) {
    if (newline) buf[n++] = '\n';
    for (size_t off = 0; off < n;) {
      const ssize_t w = write(STDERR_FILENO, buf + off, n - off);
      if (w <= 0) return;
      off += size_t(w);
    }
  }
};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
  }
}

// kill(2), tkill(2) or raise(3), not a fault of this process's own.
bool sent_by_process(int code) { return code == SI_USER || code == SI_TKILL; }

// What si_code says about the cause (sigaction(2)); null when it says nothing useful.
const char* cause(int sig, int code) {
  if (sent_by_process(code)) return "sent by a process";
  if (sig == SIGSEGV)
    return code == SEGV_MAPERR ? "address not mapped" : code == SEGV_ACCERR ? "access denied" : nullptr;
  if (sig == SIGBUS) return code == BUS_ADRERR ? "no such address (a truncated mapped file?)" : nullptr;
  if (sig == SIGFPE) return code == FPE_INTDIV ? "integer divide by zero" : nullptr;
  if (sig == SIGILL) return code == ILL_ILLOPC || code == ILL_ILLOPN ? "illegal instruction" : nullptr;
  return nullptr;
}

void on_fatal_signal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  Line line;
  line.start();
  line.text("ds4d: fatal ");
  line.text(signal_name(sig));
  if (const char* why = cause(sig, info->si_code)) {
    line.text(" (");
    line.text(why);
    line.text(")");
  }
  if (sent_by_process(info->si_code)) {
    line.text(" from pid ");
    line.number(uint64_t(info->si_pid), 10);
  } else if (sig != SIGABRT) {
    line.text(" at address ");
    line.number(reinterpret_cast<uintptr_t>(info->si_addr), 16);
  }
  char thread[17] = {};
  prctl(PR_GET_NAME, thread, 0, 0, 0);
  line.text(" in thread ");
  line.number(uint64_t(syscall(SYS_gettid)), 10);
  line.text(" (");
  line.text(thread);
  line.text("); call stack, innermost first (addr2line -f -C -e <unstripped binary> OFFSET):");
  line.flush();

  // Frame 0 is this handler; #0 printed is the kernel's signal return (libc), #1 the faulting
  // function.
  void* frames[kMaxFrames];
  const int n = backtrace(frames, kMaxFrames);
  for (int i = 1; i < n; i++) {
    line.start();
    line.text("ds4d:   #");
    line.number(uint64_t(i - 1), 10);
    line.text(" ");
    line.flush(false);
    backtrace_symbols_fd(&frames[i], 1, STDERR_FILENO);  // "binary(symbol+offset) [address]\n"
  }
  // SA_RESETHAND restored the default action: re-raising (or returning to the faulting
  // instruction) ends the process with this signal, as if no report had been made.
  errno = saved_errno;
  raise(sig);
}

}  // namespace

void install_crash_report(bool journal) {
  g_journal = journal;
  void* warm[1];
  (void)backtrace(warm, 1);  // loads libgcc_s now, not in the handler
  stack_t ss{};
  ss.ss_sp = g_alt_stack;
  ss.ss_size = sizeof g_alt_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : kSignals) sigaction(sig, &sa, nullptr);
}

}  // namespace ds4::daemon
