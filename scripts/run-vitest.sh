#!/usr/bin/env bash
# `vitest run ARGS` under a watchdog (scripts/test-all.sh runs the suite through it).
#
# Every vitest timeout is a timer in the test file's worker process: a file that blocks that
# process for good (a child process that never exits under execFileSync, say) is out of their
# reach, and the run then waits, printing nothing, until CI's limit. No file here takes more
# than about 3 minutes, so one that has run for IRONLENS_TEST_STALL_S (900 s, past vitest's own 600 s hook timeout) is stuck:
#   1. the watchdog prints it and the processes under vitest (with what each waits on), then
#      kills the processes the stuck file started, so its test fails with their error;
#   2. if the file still runs 90 s later, it kills the file's worker (vitest reports an error);
#   3. when every failure of the run is a file it stopped, those files run once more, alone,
#      and the run passes only if they pass then. Either way the stop is printed again at the
#      end (test-all.sh's last lines), as a defect to find: a stuck file is never silent.
# The reporter scripts/vitest-state.reporter.ts tells the watchdog which files run since when. When
# vitest reports no file starting or ending for that long, the processes are printed too, and
# after twice that the run is ended (it fails, with the reason printed, not at CI's limit).
set -uo pipefail
cd "$(dirname "$0")/.."

STALL_S="${IRONLENS_TEST_STALL_S:-900}"
case "$STALL_S" in '' | *[!0-9]*) echo "[vitest-watchdog] IRONLENS_TEST_STALL_S must be a number of seconds, not '$STALL_S'" >&2; exit 2 ;; esac
work="$(mktemp -d "${TMPDIR:-/tmp}/ironlens-vitest-XXXXXX")"
export IRONLENS_VITEST_STATE="$work/state"
: > "$work/stopped"
: > "$work/workers-killed"
# What test-all.sh prints again at the end.
SUMMARY="${IRONLENS_VITEST_SUMMARY:-$work/summary}"
touch "$SUMMARY"
REPORTERS=(--reporter=default --reporter=./scripts/vitest-state.reporter.ts)

descendants() {
  local p
  for p in $(ps -o pid= --ppid "$1"); do
    echo "$p"
    descendants "$p"
  done
}

# vitest's fork workers (children of its main process) that have run at least $2 seconds.
old_workers() {
  ps -o pid=,etimes=,args= --ppid "$1" | awk -v min="$2" '$3 ~ /node/ && /vitest\/dist\/workers\// && $2 >= min { print $1 }'
}

show_tree() {
  local pids
  pids="$(descendants "$1" | paste -sd, -)"
  [ -n "$pids" ] && ps -o pid,ppid,etimes,stat,wchan:22,args -p "$pids" | cut -c1-240
}

watch() {
  local vpid=$1 kind since project file age now w quiet
  while kill -0 "$vpid" 2>/dev/null; do
    sleep 15
    [ -e "$IRONLENS_VITEST_STATE" ] || continue
    now=$(date +%s)
    # vitest itself silent (no file started or ended: a worker that never came up, say): told
    # once, and after twice the limit the run is ended, so the failure has its reason printed.
    quiet=$((now - $(stat -c %Y "$IRONLENS_VITEST_STATE")))
    if [ "$quiet" -ge "$STALL_S" ] && [ "$quiet" -lt $((2 * STALL_S)) ] && [ ! -e "$work/quiet-told" ] && ! grep -q '^running ' "$IRONLENS_VITEST_STATE"; then
      touch "$work/quiet-told"
      echo "[vitest-watchdog] vitest has reported no file starting or ending for $quiet s. Under vitest now:"
      show_tree "$vpid"
    elif [ "$quiet" -ge $((2 * STALL_S)) ]; then
      echo "[vitest-watchdog] vitest has reported nothing for $quiet s: ending the run" | tee -a "$SUMMARY"
      show_tree "$vpid"
      kill -KILL $(descendants "$vpid") "$vpid" 2>/dev/null
      return
    elif [ "$quiet" -lt "$STALL_S" ]; then
      rm -f "$work/quiet-told"
    fi
    while read -r kind since project file; do
      [ "$kind" = running ] || continue
      age=$((now - since))
      [ "$age" -ge "$STALL_S" ] || continue
      if ! grep -qxF "$project $file" "$work/stopped"; then
        echo "$project $file" >> "$work/stopped"
        echo "[vitest-watchdog] $file ($project) has run for $age s, past IRONLENS_TEST_STALL_S=$STALL_S s (no file takes over about 3 minutes): it is stuck where no vitest timeout reaches. Under vitest now:"
        show_tree "$vpid"
        for w in $(old_workers "$vpid" $((STALL_S - 60))); do
          local kids
          kids="$(descendants "$w")"
          if [ -n "$kids" ]; then
            echo "[vitest-watchdog] killing what worker $w started: $(echo $kids)"
            kill -KILL $kids 2>/dev/null
          fi
        done
      elif [ "$age" -ge $((STALL_S + 90)) ] && ! grep -qxF "$project $file" "$work/workers-killed"; then
        echo "$project $file" >> "$work/workers-killed"
        echo "[vitest-watchdog] $file ($project) still runs, $age s in: killing its worker"
        show_tree "$vpid"
        for w in $(old_workers "$vpid" "$STALL_S"); do kill -KILL "$w" 2>/dev/null; done
      fi
    done < "$IRONLENS_VITEST_STATE"
  done
}

node node_modules/vitest/vitest.mjs run "${REPORTERS[@]}" "$@" &
vpid=$!
watch "$vpid" &
wpid=$!
wait "$vpid"
rc=$?
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null

if [ -s "$work/stopped" ]; then
  {
    echo "[vitest-watchdog] stopped, stuck past $STALL_S s (a defect to find; its processes are printed above):"
    sed 's/^/[vitest-watchdog]   /' "$work/stopped"
  } | tee -a "$SUMMARY"
  if [ "$rc" -ne 0 ]; then
    failed="$(awk '$1 == "failed" { print $2, $3 }' "$IRONLENS_VITEST_STATE" | sort -u)"
    errors="$(awk '$1 == "errors" { print $2 }' "$IRONLENS_VITEST_STATE")"
    other="$(comm -23 <(printf '%s\n' "$failed" | sed '/^$/d') <(sort -u "$work/stopped"))"
    killed=$(wc -l < "$work/workers-killed")
    if [ -z "$errors" ]; then
      echo "[vitest-watchdog] the run did not finish (vitest ended without its summary): nothing is run again" | tee -a "$SUMMARY"
    elif [ -z "$other" ] && [ "$errors" -le "$killed" ]; then
      echo "[vitest-watchdog] every failure of the run is a file it stopped: running those once more"
      rc=0
      while read -r project file <&3; do
        timeout -k 10 $((STALL_S + 120)) node node_modules/vitest/vitest.mjs run --project "$project" "$file"
        r=$?
        echo "[vitest-watchdog] $file ($project) run again: $([ "$r" -eq 0 ] && echo passed || echo "failed (exit $r)")" | tee -a "$SUMMARY"
        [ "$r" -eq 0 ] || rc=$r
      done 3< "$work/stopped"
    else
      extra=""
      [ -n "$other" ] && extra=" ($(echo $other))"
      [ "$errors" -gt "$killed" ] && extra="$extra, $errors error(s) no file owns"
      echo "[vitest-watchdog] the run also failed elsewhere$extra: nothing is run again" | tee -a "$SUMMARY"
    fi
  fi
fi
rm -rf "$work"
exit "$rc"
