#!/usr/bin/env bash
# Runs every Jepsen workload under every nemesis against a real 3-node
# phxgo cluster (cmd/jepsen, one cell at a time) and prints a summary table.
# Usage: scripts/jepsen-matrix.sh [extra cmd/jepsen flags, e.g. -time 30s -nodes 5]
# Env: WORKLOADS, NEMESES (space lists) narrow the matrix; OUT (results root);
#      TIME (per cell, default 180s; a -time flag overrides it).
# Workload append-rw is append with every client on the read/write-split
# port (-rwsplit). Nemesis logd runs with -op-timeout 60s -latency-bound 20s:
# a COMMIT blocked by the dead binlogd must be answered once it is back.
# Workload big (256 MiB transactions, 2 GiB one-statement loads: issue
# 20.4) runs only under kill and partition, for BIG_TIME (default 900s),
# 2 clients at 1 op/s, -op-timeout 45m: one such commit takes minutes.
# With the default schedule a fault comes every 40-90 s (-lease 20s), too
# often for a 2 GiB load (several minutes) to finish; BIG_QUIET (e.g. 7m)
# gives big cells -quiet, the fault-free time before each fault, so some
# loads commit while others meet a fault (then BIG_TIME 25m or more).
# Workloads witness and learner (issue 21) run under nemesis all only:
# witness is append on two data nodes and a witness (-nodes 3 -witnesses
# 1; faults hit the witness too), learner is append on every rw-split port
# of three voters and a learner (-nodes 4 -learners 1 -rwsplit).
# Exit status: 0 only if every cell is valid=true.
set -u
cd "$(dirname "$0")/.."
WORKLOADS=${WORKLOADS:-"register bank set append append-rw big witness learner"}
NEMESES=${NEMESES:-"kill pause partition restart power kill-majority logd all"} # power: nodes on jepsen/lazyfs (root, /dev/fuse)
TIME=${TIME:-180s}
OUT=${OUT:-jepsen-results/matrix-$(date +%Y%m%dT%H%M%S)}
mkdir -p "$OUT"

bin=bin/jepsen
if [ ! -x "$bin" ] || [ ! -x bin/binlogd ] || [ ! -x bin/sqlproxy ]; then
	echo "bin/jepsen, bin/binlogd or bin/sqlproxy missing: run make build (make jepsen does)" >&2
	exit 2
fi

status=0
rows=()
for w in $WORKLOADS; do
	for n in $NEMESES; do
		if [ "$w" = big ]; then case $n in kill | partition) ;; *) continue ;; esac; fi
		if [ "$w" = witness ] || [ "$w" = learner ]; then [ "$n" = all ] || continue; fi
		dir="$OUT/$w-$n"
		mkdir -p "$dir"
		echo "=== $w / $n -> $dir" >&2
		start=$(date +%s)
		cell=(-workload "$w")
		[ "$w" = append-rw ] && cell=(-workload append -rwsplit)
		[ "$w" = witness ] && cell=(-workload append -nodes 3 -witnesses 1)
		[ "$w" = learner ] && cell=(-workload append -rwsplit -nodes 4 -learners 1)
		[ "$n" = logd ] && cell+=(-op-timeout 60s -latency-bound 20s)
		t=$TIME
		[ "$w" = big ] && t=${BIG_TIME:-900s} && cell+=(-op-timeout 45m -concurrency 2 -rate 1)
		[ "$w" = big ] && [ -n "${BIG_QUIET:-}" ] && cell+=(-quiet "$BIG_QUIET")
		"$bin" "${cell[@]}" -nemesis "$n" -time "$t" -out "$dir" -keep "$@" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
		rc=$?
		line=$(grep '^valid=' "$dir/stdout.txt" | tail -1)
		[ -n "$line" ] || line="valid=unknown ops=0 ok=0 fail=0 info=0"
		stats=$(grep '^stats ' "$dir/stderr.txt" | tail -1)
		[ "$rc" -eq 0 ] || status=1
		rows+=("$w $n $rc $(($(date +%s) - start)) $line $stats")
		echo "$line  $stats" >&2
	done
done

field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
printf '\n%-9s %-13s %-8s %6s %6s %5s %5s %6s %6s %7s %7s %7s %5s %5s\n' workload nemesis valid ops ok fail info faults minav outage_s recov_s final_s wall exit
for r in "${rows[@]}"; do
	read -r w n rc wall line <<<"$r"
	printf '%-9s %-13s %-8s %6s %6s %5s %5s %6s %6s %7s %7s %7s %5s %5s\n' "$w" "$n" "$(field valid "$line")" \
		"$(field ops "$line")" "$(field ok "$line")" "$(field fail "$line")" "$(field info "$line")" \
		"$(field faults "$line")" "$(field min_avail "$line")" "$(field max_outage_s "$line")" \
		"$(field max_recovery_s "$line")" "$(field final_recovery_s "$line")" "$wall" "$rc"
done
echo "results: $OUT (per cell: results.json, history.jsonl, stderr.txt, logs/)"
exit $status
