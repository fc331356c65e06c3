#!/usr/bin/env bash
# bench-big-ahead: make bench-big once per value of binlogd's sink pacing
# (binlogd/node/sink.go fragmentsAhead: entries of one captured piece
# queued on the log before the first is applied), to choose it (issue
# 20.4). Each variant is built with `go build -overlay` from the tree as
# it is, with only that constant changed; the tree is not touched.
#
# Knobs: AHEAD (default "1 2 4 8"), and bench-big's BENCH_TXN_MB (default
# 256 here) and BENCH_LOAD_MB (default 0 here). Prints bench-big's last
# line per value, prefixed with "ahead=N".
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
AHEAD=${AHEAD:-1 2 4 8}
export BENCH_TXN_MB=${BENCH_TXN_MB:-256} BENCH_LOAD_MB=${BENCH_LOAD_MB:-0}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/phxgo-bench-ahead.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p bin
for c in sqlproxy phxcluster sqlbench; do go build -o bin/ "./cmd/$c"; done
grep -q '^const fragmentsAhead = ' binlogd/node/sink.go || { echo "binlogd/node/sink.go: no 'const fragmentsAhead = '" >&2; exit 1; }
for n in $AHEAD; do
  d=$WORK/ahead$n
  mkdir -p "$d/bin"
  sed "s/^const fragmentsAhead = .*/const fragmentsAhead = $n/" binlogd/node/sink.go >"$d/sink.go"
  printf '{"Replace":{"%s":"%s"}}\n' "$PWD/binlogd/node/sink.go" "$d/sink.go" >"$d/overlay.json"
  go build -overlay "$d/overlay.json" -o "$d/bin/" ./cmd/binlogd
  cp bin/sqlproxy bin/phxcluster bin/sqlbench "$d/bin/"
done
for n in $AHEAD; do
  echo "[bench-big-ahead $(date +%T)] fragmentsAhead=$n" >&2
  line=$(BENCH_BIN=$WORK/ahead$n/bin scripts/bench-big.sh | tail -1) || { echo "ahead=$n FAILED"; continue; }
  echo "ahead=$n $line"
done
