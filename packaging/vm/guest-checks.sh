#!/bin/sh
# guest-checks.sh: the checks the VM install test runs inside the Debian 12 guest.
#
# Runs as root under systemd (from ds4d-vm-check.service) with the payload disk mounted at $1.
# It installs the package the way an administrator would (dpkg -i: the guest has no network,
# the dependencies are preinstalled in the image), drives the service with systemctl, talks
# HTTP to 127.0.0.1 only, and finally purges the package. Every check prints exactly one line
#   DS4D-VM-CHECK PASS <name> [detail]   or   DS4D-VM-CHECK FAIL <name> <why>
# and the run ends with "DS4D-VM-SUMMARY <n> passed, <m> failed", which the host parses.
# A failed check also prints the service's recent journal as DS4D-VM-LOG lines.
set -u
payload=${1:?usage: guest-checks.sh PAYLOAD_DIR}
url=http://127.0.0.1:8080
conf=/etc/ds4d/ds4d.toml
passed=0
failed=0

pass() { passed=$((passed + 1)); echo "DS4D-VM-CHECK PASS $*"; }
fail() {  # the service's journal is shown with the first three failures only
  failed=$((failed + 1)); echo "DS4D-VM-CHECK FAIL $*"
  [ "$failed" -le 3 ] && journalctl -u ds4d.service -n 12 --no-pager -o cat 2>/dev/null | sed 's/^/DS4D-VM-LOG /'
}
check() {  # check NAME DETAIL-ON-FAILURE COMMAND...
  name=$1; why=$2; shift 2
  if "$@"; then pass "$name"; else fail "$name" "$why"; fi
}
# no_faults: ds4d reports a fault (SIGSEGV, SIGBUS, ...) with its call stack before it dies
# (daemon/crash_report.hpp). A report of a signal no check sent is a failure, shown whole as
# DS4D-VM-CRASH lines (vm-test.sh turns their offsets into functions); the crash check's own
# SIGSEGV is reported "sent by a process".
no_faults() {
  journalctl -u ds4d.service --no-pager -o cat 2>/dev/null | grep -a '^ds4d: ' > /tmp/ds4d-faults.txt
  first=$(grep -a '^ds4d: fatal SIG' /tmp/ds4d-faults.txt | grep -v '(sent by a process)' | head -n 1)
  if [ -z "$first" ]; then
    pass no_faults "$(grep -ac '^ds4d: fatal SIG' /tmp/ds4d-faults.txt) fault reports, each of a signal a check sent"
  else
    fail no_faults "$first"
    awk '/^ds4d: fatal SIG/ { on = !/sent by a process/ } on { print "DS4D-VM-CRASH " $0 }' /tmp/ds4d-faults.txt | head -n 70
  fi
}
wait_for() {  # wait_for SECONDS COMMAND...: poll once a second until COMMAND succeeds
  limit=$1; shift
  i=0
  while [ "$i" -lt "$limit" ]; do
    "$@" && return 0
    sleep 1; i=$((i + 1))
  done
  return 1
}
is_active() { [ "$(systemctl is-active ds4d.service)" = active ]; }
restarts() { systemctl show -p NRestarts --value ds4d.service; }
# wait_active SECONDS: until the unit is active (READY=1 came); gives up early when systemd
# restarted it meanwhile or it failed, since a start that crashed will not turn active.
wait_active() {
  r0=$(restarts); i=0
  while [ "$i" -lt "$1" ]; do
    is_active && return 0
    state=$(systemctl is-active ds4d.service)
    { [ "$(restarts)" != "$r0" ] || [ "$state" = failed ] || [ "$state" = inactive ]; } && return 1
    sleep 1; i=$((i + 1))
  done
  return 1
}
healthy() { curl -fsS -m 10 "$url/health" 2>/dev/null | grep -q '"ok"'; }
main_pid() { systemctl show -p MainPID --value ds4d.service; }
# The daemon is the supervisor's child running as the service user.
daemon_pid() { ps -o pid=,user= --ppid "$(main_pid)" 2>/dev/null | awk '$2 == "ds4d" { print $1; exit }'; }
# A TOML value from the installed configuration: toml_value SECTION KEY (flat sections only).
toml_value() {
  awk -v s="[$1]" -v k="$2" '
    /^[[:space:]]*\[/ { insec = ($0 ~ "^[[:space:]]*\\[" substr(s, 2, length(s) - 2) "\\]") }
    insec && $0 ~ "^[[:space:]]*" k "[[:space:]]*=" { sub(/^[^=]*=[[:space:]]*/, ""); sub(/[[:space:]]*#.*/, ""); gsub(/"/, ""); print; exit }
  ' "$conf"
}
chat() {  # chat MAX_TOKENS STREAM(true|false) OUTPUT_FILE [EXTRA_JSON_FIELDS]
  curl -sS -m 600 -o "$3" -w '%{http_code}' "$url/v1/chat/completions" \
    -H 'Content-Type: application/json' \
    -d "{\"model\":\"ds4d\",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello.\"}],\"max_tokens\":$1,\"stream\":$2${4:+,$4}}"
}

echo "DS4D-VM-INFO kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MiB"

# No drop-in and no edited configuration: the package must start with what a user gets. Its
# memory budgets are `auto`, so the planner sizes context, hot cache, reserve, floor and swap for
# this 2 GiB guest (docs/memory.md §auto-budgets); the plan the supervisor logged is shown.

# --- install -------------------------------------------------------------------------------
deb=$(ls "$payload"/ds4d_*.deb 2>/dev/null | head -n 1)
# The postinst starts the unit and waits for the start job; the timeout only keeps a hung start
# from eating the whole VM budget.
if [ -n "$deb" ] && timeout 900 dpkg -i "$deb" >/tmp/dpkg-install.log 2>&1; then
  pass install "$(basename "$deb")"
else
  fail install "dpkg -i failed: $(tail -n 3 /tmp/dpkg-install.log 2>/dev/null | tr '\n' ' ')"
  echo "DS4D-VM-SUMMARY $passed passed, $failed failed"
  exit 1
fi
dpkg-query -L ds4d | sort > /tmp/ds4d-files.txt
check service_user "no ds4d system user" getent passwd ds4d
check conffile "$conf is not a conffile" sh -c "dpkg-query -W -f='\${Conffiles}' ds4d | grep -q ' $conf '"
check unit_enabled "ds4d.service not enabled by the postinst" sh -c '[ "$(systemctl is-enabled ds4d.service)" = enabled ]'

# --- start ---------------------------------------------------------------------------------
start_t=$(date +%s)
systemctl start --no-block ds4d.service
if wait_active 300; then
  pass active "after $(( $(date +%s) - start_t ))s"
else
  fail active "state $(systemctl is-active ds4d.service) after $(( $(date +%s) - start_t ))s, $(restarts) restarts"
fi
if is_active && wait_for 60 healthy; then pass health; else fail health "/health did not answer ok"; fi
t0=$(date +%s%N)
code=$(chat 32 false /tmp/chat.json)
chat_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$code" = 200 ] && grep -q '"choices"' /tmp/chat.json && grep -q '"content"' /tmp/chat.json; then
  pass chat_completion "${chat_ms} ms: $(head -c 160 /tmp/chat.json | tr -cd '[:print:]')"
else
  fail chat_completion "HTTP $code: $(head -c 300 /tmp/chat.json 2>/dev/null)"
fi
status_text=$(systemctl show -p StatusText --value ds4d.service)
if [ -n "$status_text" ] && systemctl status ds4d.service --no-pager 2>/dev/null | grep -q "Status: \"$status_text\""; then
  pass status_text "$status_text"
else
  fail status_text "systemctl status shows no STATUS= text (StatusText='$status_text')"
fi
echo "DS4D-VM-INFO $(systemd-analyze security ds4d.service 2>/dev/null | tail -n 1)"
pid=$(daemon_pid)
check daemon_user "no ds4d process running as user ds4d under the supervisor" test -n "$pid"
echo "DS4D-VM-INFO $(journalctl -u ds4d.service -o cat --no-pager 2>/dev/null | grep -m1 'memory plan (' | tr -cd '[:print:]')"

# --- memory protection ---------------------------------------------------------------------
if systemctl cat earlyoom.service 2>/dev/null | grep -q -- '--avoid.*ds4d'; then
  pass earlyoom_dropin "$(systemctl cat earlyoom.service | grep -m1 -- '--avoid')"
else
  fail earlyoom_dropin "no --avoid rule for ds4d in systemctl cat earlyoom"
fi
eo_pid=$(systemctl show -p MainPID --value earlyoom.service)
if [ "$(systemctl is-active earlyoom.service)" = active ] && [ "${eo_pid:-0}" -gt 0 ] \
   && tr '\0' ' ' < "/proc/$eo_pid/cmdline" | grep -q -- '--avoid'; then
  pass earlyoom_running "$(tr '\0' ' ' < "/proc/$eo_pid/cmdline")"
else
  fail earlyoom_running "earlyoom is not running with the drop-in's arguments"
fi
if [ "$(wc -l < /proc/swaps)" -gt 1 ]; then
  pass swap_on "$(tail -n +2 /proc/swaps | awk '{print $1, $3 " KiB"}' | tr '\n' ' ')"
else
  fail swap_on "/proc/swaps lists no swap"
fi
want_adj=$(toml_value memory oom_score_adj)
have_adj=$(cat "/proc/${pid:-0}/oom_score_adj" 2>/dev/null)
if [ -n "$want_adj" ] && [ "$have_adj" = "$want_adj" ]; then
  pass oom_score_adj "daemon pid $pid has $have_adj"
else
  fail oom_score_adj "daemon pid ${pid:-none} has '${have_adj}', configured '${want_adj}'"
fi

# The install probe ends here (vm-test.sh DS4D_VM_PROBE=install: a guest under slow emulation).
if [ "$(cat "$payload/probe" 2>/dev/null)" = install ]; then
  echo "DS4D-VM-INFO install probe only: stop, restart, crash, memory pressure and purge not checked"
  no_faults
  echo "DS4D-VM-SUMMARY $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi

# --- stop drains the in-flight request -----------------------------------------------------
# The request must still be generating when the stop arrives and must finish well inside the
# daemon's drain timeout, so its length is capped from the speed measured above (about 20 s of
# generation under TCG). The trained default model answers "Say hello." in a few tokens and then
# samples end-of-sequence, even from a flattened distribution (the arm64 guest of 7 Dec 2026 got
# 7-8 tokens three times, done inside the 0.5 s wait), so this request bans end-of-sequence with
# logit_bias -100 (its id from /tokenize) and runs to its max_tokens. It counts as in flight as
# soon as it is sent and not yet answered; up to three tries.
completion_tokens=$(sed -n 's/.*"completion_tokens":\([0-9]*\).*/\1/p' /tmp/chat.json)
drain_tokens=$(( ${completion_tokens:-32} * 20000 / (chat_ms + 1) ))
[ "$drain_tokens" -lt 16 ] && drain_tokens=16
[ "$drain_tokens" -gt 4000 ] && drain_tokens=4000
eos_id=$(curl -sS -m 60 "$url/tokenize" -H 'Content-Type: application/json' \
  -d '{"content":"<｜end▁of▁sentence｜>"}' | sed -n 's/^{"tokens":\[\([0-9]*\)\]}$/\1/p')
no_eos=${eos_id:+,\"logit_bias\":{\"$eos_id\":-100\}}
for try in 1 2 3; do
  rm -f /tmp/stream.out
  ( chat "$drain_tokens" true /tmp/stream.out \
      "\"thinking\":{\"type\":\"disabled\"},\"temperature\":2,\"top_p\":1,\"min_p\":0$no_eos" > /tmp/stream.code ) &
  curl_pid=$!
  # In flight: the request has been sent and its stream has not ended yet (a short answer
  # under TCG still takes seconds; waiting for the first token could outlast it).
  sleep 0.5
  in_flight=no
  kill -0 "$curl_pid" 2>/dev/null && ! grep -q '^data: \[DONE\]' /tmp/stream.out 2>/dev/null && in_flight=yes
  [ "$in_flight" = yes ] && break
  wait "$curl_pid"
done
stop_t=$(date +%s)
systemctl stop ds4d.service
stop_s=$(( $(date +%s) - stop_t ))
wait "$curl_pid"
result=$(systemctl show -p Result --value ds4d.service)
timeout_s=$(systemctl show -p TimeoutStopUSec --value ds4d.service)
if [ "$result" = success ] && [ "$in_flight" = yes ] && [ "$(cat /tmp/stream.code)" = 200 ] \
   && grep -q '^data: \[DONE\]' /tmp/stream.out; then
  pass stop_drains "stopped in ${stop_s}s (limit $timeout_s); the in-flight stream of up to $drain_tokens tokens finished"
else
  fail stop_drains "result=$result in_flight_at_stop=$in_flight http=$(cat /tmp/stream.code) stop=${stop_s}s; stream tail: $(tail -c 200 /tmp/stream.out 2>/dev/null | tr '\n' ' ')"
fi
check stopped_no_processes "processes left in the unit after stop" \
  sh -c '! ps -u ds4d -o pid= | grep -q .'

# --- restart and crash recovery ------------------------------------------------------------
# restart blocks until the new instance sent READY=1 (or failed).
if timeout 400 systemctl restart ds4d.service && is_active && wait_for 60 healthy; then
  pass restart
else
  fail restart "not active and healthy after systemctl restart"
  # So that the crash checks below still say something: if the swapfile is what the restart
  # tripped over, take it out of use and start once more (reported, not counted).
  if journalctl -u ds4d.service -n 20 -o cat --no-pager | grep -q 'swapon.*busy'; then
    swapoff /var/lib/ds4d/swapfile 2>/dev/null || swapoff -a
    systemctl reset-failed ds4d.service
    timeout 400 systemctl start ds4d.service
    echo "DS4D-VM-INFO restart recovery: swapoff, then start: $(systemctl is-active ds4d.service)"
  fi
fi
# A crash (SIGSEGV) is restarted in place by the supervisor: same main PID, new daemon.
sup_before=$(main_pid)
old=$(daemon_pid)
new_daemon() { p=$(daemon_pid); [ -n "$p" ] && [ "$p" != "$1" ]; }
if [ -n "$old" ]; then
  kill -SEGV "$old"
  if wait_for 120 new_daemon "$old" && wait_for 120 healthy && [ "$(main_pid)" = "$sup_before" ]; then
    pass daemon_crash_restart "supervisor $sup_before replaced crashed daemon $old with $(daemon_pid)"
  else
    fail daemon_crash_restart "after SIGSEGV to $old: supervisor $(main_pid) (was $sup_before), daemon '$(daemon_pid)'"
  fi
else
  fail daemon_crash_restart "no daemon process to crash"
fi
# A SIGKILL the supervisor did not send (the kernel OOM killer's) makes it exit 137, and
# systemd's Restart=always brings the whole unit back: new main PID, one more NRestarts.
sup_before=$(main_pid)
old=$(daemon_pid)
r0=$(restarts)
if [ -n "$old" ]; then
  kill -KILL "$old"
  if wait_for 180 sh -c "[ \"\$(systemctl show -p NRestarts --value ds4d.service)\" -gt $r0 ]" \
     && wait_active 300 && wait_for 120 healthy && [ "$(main_pid)" != "$sup_before" ]; then
    pass daemon_kill_unit_restart "systemd restarted the unit: supervisor $sup_before -> $(main_pid), NRestarts $r0 -> $(restarts)"
  else
    fail daemon_kill_unit_restart "after SIGKILL to $old: supervisor $(main_pid) (was $sup_before), NRestarts $(restarts) (was $r0), state $(systemctl is-active ds4d.service)"
  fi
else
  fail daemon_kill_unit_restart "no daemon process to kill"
fi

# --- memory pressure: the floor refuses new work; earlyoom kills a hog, never the daemon ------
# The floor is the daemon's own (auto-sized, read back from /metrics); earlyoom's SIGTERM level
# is half of it (the supervisor's drop-in). A hog first holds MemAvailable at 3/4 of the floor,
# between the two: the daemon must answer new work with 503 naming memory.floor, and 200 again
# once the hog is gone. Then a hog that grows without bound must be killed by earlyoom (its
# journal names the hog's pid) while the daemon keeps its pid, its supervisor and its health.
floor_mib=$(curl -fsS -m 10 "$url/metrics" 2>/dev/null \
            | awk '$1 == "ds4d_memory_floor_bytes" { printf "%d\n", $2 / 1048576 }')
hog=$payload/ds4d-memhog
pid=$(daemon_pid)
sup=$(main_pid)
avail_mib() { awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo; }
# gone PID: the process has exited (a zombie counts: the shell reaps it only in `wait`).
gone() { st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null); [ -z "$st" ] || [ "$st" = Z ]; }
if [ -n "$floor_mib" ] && [ -n "$pid" ] && is_active && wait_for 60 healthy; then
  "$hog" $(( floor_mib * 1024 * 3 / 4 )) > /tmp/hog.out 2>&1 &
  hog_pid=$!
  refused_503() { [ "$(chat 4 false /tmp/pressure.json)" = 503 ] && grep -q 'memory.floor' /tmp/pressure.json; }
  refused=no
  wait_for 240 grep -q holding /tmp/hog.out && wait_for 60 refused_503 && refused=yes
  held_avail=$(avail_mib)
  kill -KILL "$hog_pid" 2>/dev/null
  wait "$hog_pid" 2>/dev/null
  if [ "$refused" = yes ]; then
    pass memory_floor_503 "MemAvailable ${held_avail} MiB below the ${floor_mib} MiB floor: $(head -c 150 /tmp/pressure.json | tr -cd '[:print:]')"
  else
    fail memory_floor_503 "hog '$(cat /tmp/hog.out)', MemAvailable ${held_avail} MiB, last answer: $(head -c 200 /tmp/pressure.json 2>/dev/null | tr -cd '[:print:]')"
  fi
  chat_200() { [ "$(chat 4 false /tmp/recovered.json)" = 200 ]; }
  if wait_for 60 chat_200 && healthy; then
    pass memory_floor_recovers "200 again at MemAvailable $(avail_mib) MiB"
  else
    fail memory_floor_recovers "after the hog was gone: $(head -c 200 /tmp/recovered.json 2>/dev/null | tr -cd '[:print:]')"
  fi

  since=$(date '+%Y-%m-%d %H:%M:%S')
  "$hog" 0 > /tmp/hog.out 2>&1 &
  hog_pid=$!
  wait_for 300 gone "$hog_pid"
  wait "$hog_pid" 2>/dev/null
  hog_status=$?
  eo_log=$(journalctl -u earlyoom.service --since "$since" -o cat --no-pager 2>/dev/null)
  kernel_oom=$(journalctl -k --since "$since" -o cat --no-pager 2>/dev/null | grep -i 'killed process' | head -n 3)
  if printf '%s\n' "$eo_log" | grep -Eq "SIG(TERM|KILL)[^0-9]*$hog_pid([^0-9]|\$)"; then
    pass earlyoom_kills_hog "exit status $hog_status: $(printf '%s\n' "$eo_log" | grep -E -m1 "SIG(TERM|KILL)[^0-9]*$hog_pid([^0-9]|\$)" | tr -cd '[:print:]')"
  else
    fail earlyoom_kills_hog "hog $hog_pid ended with status $hog_status; earlyoom said: $(printf '%s\n' "$eo_log" | tail -n 3 | tr '\n' ' '); kernel: $kernel_oom"
  fi
  if [ "$(daemon_pid)" = "$pid" ] && [ "$(main_pid)" = "$sup" ] && wait_for 60 healthy \
     && ! printf '%s\n' "$eo_log" | grep -Eq "SIG(TERM|KILL)[^0-9]*$pid([^0-9]|\$)" && [ -z "$kernel_oom" ]; then
    pass earlyoom_spares_daemon "daemon $pid and supervisor $sup kept; healthy at MemAvailable $(avail_mib) MiB"
  else
    fail earlyoom_spares_daemon "daemon '$(daemon_pid)' (was $pid), supervisor '$(main_pid)' (was $sup); kernel: $kernel_oom"
  fi
else
  for c in memory_floor_503 memory_floor_recovers earlyoom_kills_hog earlyoom_spares_daemon; do
    fail "$c" "not run: floor '${floor_mib}' MiB, daemon '${pid}', state $(systemctl is-active ds4d.service)"
  done
fi

# --- purge ---------------------------------------------------------------------------------
if dpkg --purge ds4d >/tmp/dpkg-purge.log 2>&1; then
  pass purge
else
  fail purge "dpkg --purge failed: $(tail -n 3 /tmp/dpkg-purge.log | tr '\n' ' ')"
fi
left=""
while read -r f; do
  [ -e "$f" ] && [ ! -d "$f" ] && left="$left $f"
done < /tmp/ds4d-files.txt
# Documented leftovers: the ds4d system user, and the swapfile while it is in use as swap.
kept="the ds4d system user"
swapfile=/var/lib/ds4d/swapfile
# An active swapfile refuses fallocate (ETXTBSY; a no-op on an inactive one); /proc/swaps may
# name it relative to the unit's mount namespace, so the path there is not a reliable test.
if [ -e "$swapfile" ] && ! fallocate -n -o 0 -l 4096 "$swapfile" 2>/dev/null; then
  kept="$kept, the active swapfile $swapfile"
  extra=$(find /var/lib/ds4d -mindepth 1 ! -path "$swapfile" 2>/dev/null | tr '\n' ' ')
  [ -n "$extra" ] && left="$left $extra"
else
  [ -e /var/lib/ds4d ] && left="$left /var/lib/ds4d"
fi
for f in /etc/ds4d /run/ds4d /etc/systemd/system/earlyoom.service.d/50-ds4d.conf \
         /etc/systemd/system/earlyoom.service.d /usr/share/ds4d /lib/systemd/system/ds4d.service; do
  [ -e "$f" ] && left="$left $f"
done
if [ -z "$left" ] && ! ps -u ds4d -o pid= 2>/dev/null | grep -q .; then
  pass purge_clean "left only the documented state: $kept"
else
  fail purge_clean "left after purge:$left"
fi

eo_pid=$(systemctl show -p MainPID --value earlyoom.service)
if [ "$(systemctl is-active earlyoom.service)" = active ] && [ "${eo_pid:-0}" -gt 0 ] \
   && ! tr '\0' ' ' < "/proc/$eo_pid/cmdline" | grep -q -- '--avoid'; then
  pass earlyoom_restored "$(tr '\0' ' ' < "/proc/$eo_pid/cmdline")"
else
  fail earlyoom_restored "earlyoom not running with its own defaults after the purge"
fi
no_faults

echo "DS4D-VM-SUMMARY $passed passed, $failed failed"
[ "$failed" -eq 0 ]
