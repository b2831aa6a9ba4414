#pragma once
// What ds4d prints when it dies of a fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): one line
// naming the signal, its cause and address and the thread, then the call stack, one frame a
// line, on stderr (the journal under systemd), and then the process dies of the same signal, so
// that the supervisor and systemd see what they saw before. Without it a crash in the field left
// only "killed by SIGSEGV" behind. The frames name the binary and an offset in it, which
// `addr2line -f -C -e <unstripped ds4d> OFFSET` turns into a function (docs/faults.md §crash-report).
//
// Only async-signal-safe calls run in the handler, on an alternate stack (so that a stack
// overflow of the main thread is still reported; other threads overflowing die unreported).

namespace ds4::daemon {

// Installs the handlers for the whole process (call once, early in main). `journal`: prefix each
// line with the journal's "<2>" (critical) priority, as the logger does under JOURNAL_STREAM.
void install_crash_report(bool journal);

}  // namespace ds4::daemon
