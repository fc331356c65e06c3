#!/usr/bin/env bash
# Side-by-side consensus benchmark of issue 2 (make bench-consensus).
#
# In one run on this machine, in turns (the order rotates each round, to
# spread the machine's noise), with the same load shape (3 nodes in one
# process, real loopback TCP, fsync on, closed-loop writers, BENCH_VALUE-byte
# commands):
#   phxgo   cmd/paxosbench (this project's Multi-Paxos and Badger wal)
#   raft    hashicorp/raft v1.8 with raft-boltdb
#   etcd    an embedded 3-member etcd v3.7, Put through clientv3
# The baselines live in scripts/consensusbaseline, a module of their own,
# so phxgo itself imports no consensus library. It prints each run, the
# median per system and client count, and last the line
#   ratio_64=<phxgo / best baseline, 64 clients> ratio_1=<same, 1 client> p99_64_ms=<phxgo>
#
# Knobs (environment): BENCH_SECONDS (default 10), BENCH_ROUNDS (default 3),
# BENCH_CLIENTS (default "64 1"), BENCH_VALUE (command bytes, default 256;
# e.g. 65536 for large commands).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
SECS=${BENCH_SECONDS:-10}
ROUNDS=${BENCH_ROUNDS:-3}
CLIENTS=${BENCH_CLIENTS:-64 1}
VALUE=${BENCH_VALUE:-256}

log() { printf '[bench-consensus %s] %s\n' "$(date +%T)" "$*" >&2; }
mkdir -p bin
go build -o bin/ ./cmd/paxosbench
(cd scripts/consensusbaseline && go build -o ../../bin/consensusbaseline .)

OUT=$(mktemp "${TMPDIR:-/tmp}/bench-consensus.XXXXXX")
trap 'rm -f "$OUT" "$OUT.sum"' EXIT
SYSTEMS=(phxgo raft etcd)
run() { # run SYSTEM CLIENTS: prints the result line
  # Each run starts on a quiet disk: the previous one's dirty pages (its
  # wal, deleted or not) would otherwise be written back during this one.
  sync
  case $1 in
    phxgo) bin/paxosbench -nodes 3 -clients "$2" -seconds "$SECS" -value "$VALUE" 2>/dev/null | tail -1 ;;
    *) bin/consensusbaseline -system "$1" -nodes 3 -clients "$2" -seconds "$SECS" -value "$VALUE" | tail -1 ;;
  esac
}
for ((r = 0; r < ROUNDS; r++)); do
  for c in $CLIENTS; do
    for j in 0 1 2; do
      s=${SYSTEMS[$(((r + j) % 3))]}
      line=$(run "$s" "$c")
      log "round $((r + 1)) $s clients=$c: $line"
      echo "$s $c $line" >>"$OUT"
    done
  done
done

echo
printf '%-6s %7s %12s %9s %9s\n' system clients commits/s p50_ms p99_ms
awk '
  { split($3, a, "="); split($4, b, "="); split($5, d, "=")
    k = $1 " " $2; n[k]++; cps[k, n[k]] = a[2]; p50[k, n[k]] = b[2]; p99[k, n[k]] = d[2] }
  function median(arr, k, m,   i, j, t, v) {
    for (i = 1; i <= m; i++) v[i] = arr[k, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return v[int((m + 1) / 2)]
  }
  END {
    for (k in n) {
      split(k, s, " ")
      med[k] = median(cps, k, n[k]); m99[k] = median(p99, k, n[k])
      printf "T %-6s %7d %12.0f %9.2f %9.2f\n", s[1], s[2], med[k], median(p50, k, n[k]), m99[k]
    }
    for (c = 1; c <= 64; c *= 64) {
      best = med["raft " c]; if (med["etcd " c] > best) best = med["etcd " c]
      r[c] = (best > 0 ? med["phxgo " c] / best : 0)
    }
    printf "R ratio_64=%.2f ratio_1=%.2f p99_64_ms=%.2f\n", r[64], r[1], m99["phxgo 64"]
  }' "$OUT" >"$OUT.sum"
grep '^T' "$OUT.sum" | cut -c3- | sort -k1,1 -k2,2n
echo
grep '^R' "$OUT.sum" | cut -c3-
rm -f "$OUT.sum"
