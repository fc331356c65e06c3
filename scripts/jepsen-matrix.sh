#!/usr/bin/env bash
# Runs every Jepsen workload under every nemesis and prints a summary table.
# Usage: scripts/jepsen-matrix.sh [extra cmd/jepsen flags, e.g. -time 30s -nodes 5]
# Env: WORKLOADS, NEMESES (space lists) narrow the matrix; OUT (results root).
# Exit status: 0 only if every cell is valid=true.
set -u
cd "$(dirname "$0")/.."
WORKLOADS=${WORKLOADS:-"register bank set append"}
NEMESES=${NEMESES:-"kill pause partition restart all"}
OUT=${OUT:-jepsen-results/matrix-$(date +%Y%m%dT%H%M%S)}
mkdir -p "$OUT"

bin=bin/jepsen
if [ ! -x "$bin" ]; then
	bin="$OUT/jepsen"
	go build -o "$bin" ./cmd/jepsen || exit 2
fi

status=0
rows=()
for w in $WORKLOADS; do
	for n in $NEMESES; do
		dir="$OUT/$w-$n"
		mkdir -p "$dir"
		echo "=== $w / $n -> $dir" >&2
		"$bin" -workload "$w" -nemesis "$n" -out "$dir" "$@" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
		rc=$?
		line=$(grep '^valid=' "$dir/stdout.txt" | tail -1)
		[ -n "$line" ] || line="valid=unknown ops=0 ok=0 fail=0 info=0"
		[ "$rc" -eq 0 ] || status=1
		rows+=("$w $n $rc $line")
		echo "$line" >&2
	done
done

field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
printf '\n%-9s %-10s %-8s %7s %7s %6s %6s %s\n' workload nemesis valid ops ok fail info exit
for r in "${rows[@]}"; do
	read -r w n rc line <<<"$r"
	printf '%-9s %-10s %-8s %7s %7s %6s %6s %s\n' "$w" "$n" "$(field valid "$line")" \
		"$(field ops "$line")" "$(field ok "$line")" "$(field fail "$line")" "$(field info "$line")" "$rc"
done
echo "results: $OUT"
exit $status
