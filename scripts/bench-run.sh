#!/usr/bin/env bash
# `make bench-run`: what `debugtop-cli run` costs, measured side by side in one run.
#  1. wall time of a command that starts and ends 5,000 short processes, bare and under `run`
#     (interleaved, 5 rounds each, medians compared);
#  2. the CPU `run` itself uses (its utime + stime, from /proc) while a quiet 20 s command
#     runs, as a share of one core.
# Usage: scripts/bench-run.sh [path/to/debugtop-cli] (default: the release build).
# RUN_FLAGS adds flags to `run` (e.g. RUN_FLAGS=--follow-forks, as root).
set -euo pipefail
CLI=${1:-target/release/debugtop-cli}
[ -x "$CLI" ] || { echo "bench-run: build it first: cargo build --release -p debugtop-cli" >&2; exit 2; }
ROUNDS=${ROUNDS:-5}
SHORT='for i in $(seq 5000); do /bin/true; done'
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }
bare=(); wrapped=()
for r in $(seq "$ROUNDS"); do
  t0=$(now); sh -c "$SHORT"; t1=$(now)
  "$CLI" run --grace 0 ${RUN_FLAGS:-} -- sh -c "$SHORT" 2>/dev/null; t2=$(now)
  bare+=("$(calc "$t1 - $t0")"); wrapped+=("$(calc "$t2 - $t1")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
b=$(median "${bare[@]}"); w=$(median "${wrapped[@]}")
echo "5,000 short processes: bare ${b} s, under run ${w} s (median of $ROUNDS each, interleaved)"
echo "  wall ratio: $(calc "$w / $b")  (budget: at most 1.03)"
QUIET=${QUIET:-20}
"$CLI" run --grace 0 ${RUN_FLAGS:-} -- sleep "$QUIET" 2>/dev/null &
pid=$!
sleep 1
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
a=$(ticks "$pid"); sleep $((QUIET - 3)); z=$(ticks "$pid")
wait "$pid"
hz=$(getconf CLK_TCK)
echo "quiet ${QUIET} s command: run used $((z - a)) ticks in $((QUIET - 3)) s"
echo "  share of a core: $(calc "($z - $a) / $hz / ($QUIET - 3) * 100") %  (budget: at most 1 %)"
