#!/usr/bin/env bash
# Commit latency and binlogd CPU of two builds against MariaDB semi-sync, in
# one run (issue 19, the Paxos path): a reduced bench-sql. Starts on
# loopback the semi-sync baseline (sqlbench baseline-up: master-only
# semi-sync, durable replicas) and one 3-node phxcluster without proxies,
# restarted from BIN_A's and BIN_B's binaries in turns (data kept). Each
# round runs sysbench oltp_insert straight to each master: semisync, A, B
# (rotating which goes first). Per turn it prints avg/p95 against the
# semi-sync run of the same round, binlogd CPU µs per transaction (all
# three, replicas' catch-up included), transactions per Paxos value, and
# the commit path's stages from the master's metrics (means per batch or
# value); last the sums over rounds:
#   ab a_p95_ratio= b_p95_ratio= a_avg_ratio= b_avg_ratio= a_binlogd_us= b_binlogd_us= a_txn_per_value= b_txn_per_value=
#
# Usage: scripts/bench-paxos-ab.sh BIN_A BIN_B  (dirs with binlogd, phxcluster, sqlbench)
# Knobs: ROUNDS (2), SECONDS_PER_RUN (20), THREADS (16), RATE (none: closed loop), PORT (33000), OUT (temp dir, kept)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BIN_A BIN_B" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd)
ROUNDS=${ROUNDS:-2} SECS=${SECONDS_PER_RUN:-20} THR=${THREADS:-16} PORT=${PORT:-33000}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/phxgo-ab.XXXXXX")}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/phxgo-ab-work.XXXXXX")
PHX=$WORK/phxgo BASE=$WORK/baseline PHX_PORT=$((PORT + 100))
mkdir -p "$OUT"
log() { printf '[bench-paxos-ab %s] %s\n' "$(date +%T)" "$*" >&2; }
cleanup() {
  "$B/phxcluster" down -dir "$PHX" -base-port "$PHX_PORT" >/dev/null 2>&1 || true
  [ -d "$BASE" ] && "$B/sqlbench" baseline-down -dir "$BASE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
jf() { grep -o "\"$2\": *\"[^\"]*\"" "$1" | sed 's/.*: *"\(.*\)"/\1/'; }
SB=(--db-driver=mysql --mysql-db=sbtest --tables=4 --table-size=10000 --db-ps-mode=auto)
# RATE: a fixed transaction rate (sysbench --rate) instead of a closed
# loop, so both builds and the baseline carry the same load and CPU per
# transaction compares on a loaded host (idle costs are spread alike).
RUN_SB=("${SB[@]}")
[ -n "${RATE:-}" ] && RUN_SB+=(--rate="$RATE")

# The phxgo cluster's password is generated; the baseline gets the same.
"$A/phxcluster" up -dir "$PHX" -base-port "$PHX_PORT" -bin "$A" -proxy=false >"$OUT/up-first.txt" 2>&1 ||
  { cat "$OUT/up-first.txt" >&2; exit 1; }
PASS=$(jf "$PHX/cluster.json" app_password)
export SQLBENCH_PASSWORD=$PASS
BASE_ADDR=$("$A/sqlbench" baseline-up -dir "$BASE" -base-port "$PORT" -app-password "$PASS")
BASE_REPLICAS=127.0.0.1:$((PORT + 2)),127.0.0.1:$((PORT + 3))
BASE_PIDS=$(cat "$BASE"/node{1,2,3}/mysqld.pid | paste -sd,)
sysbench oltp_common "${SB[@]}" --mysql-host="${BASE_ADDR%:*}" --mysql-port="${BASE_ADDR##*:}" --mysql-user=app \
  --mysql-password="$PASS" --threads=1 prepare >"$OUT/prepare-base.txt" 2>&1

M=-1
find_master() { # sets M, my, bl, ht
  local bin=$1 i t
  mapfile -t my < <(jf "$PHX/cluster.json" mysql_addr)
  mapfile -t bl < <(jf "$PHX/cluster.json" binlogd_addr)
  mapfile -t ht < <(jf "$PHX/cluster.json" http_addr)
  M=-1
  for t in $(seq 120); do
    for i in 0 1 2; do
      "$bin/binlogd" status -addr "${bl[$i]}" -tls-dir "$PHX/tls" 2>/dev/null | grep -qE '^role +master$' && M=$i
    done
    [ "$M" -ge 0 ] && return 0
    sleep 1
  done
  log "no master after 120 s"
  exit 1
}
find_master "$A"
mariadb -h"${my[$M]%:*}" -P"${my[$M]##*:}" -uapp -p"$PASS" -e 'CREATE DATABASE IF NOT EXISTS sbtest'
sysbench oltp_common "${SB[@]}" --mysql-host="${my[$M]%:*}" --mysql-port="${my[$M]##*:}" --mysql-user=app \
  --mysql-password="$PASS" --threads=1 prepare >"$OUT/prepare-phx.txt" 2>&1
CUR=$A

scrape() { curl -s "http://${ht[$M]}/metrics" | grep -E '^phxgo_(capture|binlogd_semisync|binlogd_captured|paxos|wal)_' >"$1" || true; }

phx_turn() { # phx_turn TAG BIN
  local tag=$1 bin=$2 r1 r2
  if [ "$CUR" != "$bin" ]; then
    "$CUR/phxcluster" down -dir "$PHX" -base-port "$PHX_PORT" >/dev/null 2>&1 || true
    "$bin/phxcluster" up -dir "$PHX" -base-port "$PHX_PORT" -bin "$bin" -proxy=false >"$OUT/up-$tag.txt" 2>&1 ||
      { cat "$OUT/up-$tag.txt" >&2; exit 1; }
    CUR=$bin
  fi
  find_master "$bin"
  r1=$(((M + 1) % 3)) r2=$(((M + 2) % 3))
  "$bin/sqlbench" waitapplied -master "${my[$M]}" -replicas "${my[$r1]},${my[$r2]}" >/dev/null
  local pids; pids=$(cat "$PHX"/node{1,2,3}/binlogd.pid | paste -sd,)
  scrape "$OUT/metrics-$tag-before.txt"
  "$bin/sqlbench" run -label "$tag" -test oltp_insert -threads "$THR" -seconds "$SECS" -target "${my[$M]}" \
    -master "${my[$M]}" -replicas "${my[$r1]},${my[$r2]}" -pids "binlogd=$pids" \
    -metrics "$(printf 'http://%s/metrics,' "${ht[@]}")" \
    -out "$OUT/results.jsonl" -log "$OUT/sysbench-$tag.txt" -- "${RUN_SB[@]}" >&2
  scrape "$OUT/metrics-$tag-after.txt"
  stages "$tag"
}

base_turn() {
  "$A/sqlbench" waitapplied -master "$BASE_ADDR" -replicas "$BASE_REPLICAS" >/dev/null
  "$A/sqlbench" run -label "$1" -test oltp_insert -threads "$THR" -seconds "$SECS" -target "$BASE_ADDR" \
    -master "$BASE_ADDR" -replicas "$BASE_REPLICAS" -pids "mariadbd=$BASE_PIDS" \
    -out "$OUT/results.jsonl" -log "$OUT/sysbench-$1.txt" -- "${RUN_SB[@]}" >&2
}

# stages TAG: the master's commit-path means over the turn, from the
# difference of its metrics (sums / counts; histograms' _sum/_count).
stages() {
  awk -v tag="$1" '
    FNR == 1 { f++ }
    { v[f, $1] = $2 }
    END {
      d = "" ; split("", x)
      for (k in v) { split(k, p, SUBSEP); if (p[1] == 2) x[p[2]] = v[2, p[2]] - v[1, p[2]] }
      printf "stages %s", tag
      pr("read_to_propose_ms", x["phxgo_capture_read_to_propose_seconds_total"], x["phxgo_capture_batches_total"])
      pr("propose_to_durable_ms", x["phxgo_capture_propose_to_durable_seconds_total"], x["phxgo_capture_batches_total"])
      pr("ack_ms", x["phxgo_binlogd_semisync_ack_seconds_total"], x["phxgo_binlogd_semisync_acks_total"])
      pr("paxos_commit_ms", x["phxgo_paxos_commit_latency_seconds_sum"], x["phxgo_paxos_commit_latency_seconds_count"])
      pr("queue_ms", x["phxgo_paxos_queue_seconds_sum"], x["phxgo_paxos_queue_seconds_count"])
      pr("accept_round_ms", x["phxgo_paxos_accept_round_seconds_sum"], x["phxgo_paxos_accept_round_seconds_count"])
      pr("chosen_to_applied_ms", x["phxgo_paxos_chosen_to_applied_seconds_sum"], x["phxgo_paxos_chosen_to_applied_seconds_count"])
      pr("wal_fsync_ms", x["phxgo_wal_fsync_seconds_sum"], x["phxgo_wal_fsync_seconds_count"])
      printf " batches=%d values=%d txns_per_batch=%.2f\n", x["phxgo_capture_batches_total"], x["phxgo_paxos_values_proposed_total"],
        x["phxgo_binlogd_captured_transactions_total"] / (x["phxgo_capture_batches_total"] + 1e-9)
    }
    function pr(name, s, n) { if (n > 0) printf " %s=%.2f", name, 1000 * s / n }
  ' "$OUT/metrics-$1-before.txt" "$OUT/metrics-$1-after.txt" | tee -a "$OUT/stages.txt"
}

for r in $(seq "$ROUNDS"); do
  order=("S$r" "A$r" "B$r")
  for ((j = 0; j < 3; j++)); do
    t=${order[$(((r - 1 + j) % 3))]}
    log "round $r: $t"
    case $t in
      S*) base_turn "$t" ;;
      A*) phx_turn "$t" "$A" ;;
      B*) phx_turn "$t" "$B" ;;
    esac
  done
done

awk '{
  tag = $0; sub(/.*"label":"/, "", tag); sub(/".*/, "", tag)
  n = $0; sub(/.*"txns":/, "", n); sub(/,.*/, "", n)
  avg = $0; sub(/.*"avg_ms":/, "", avg); sub(/,.*/, "", avg)
  p95 = $0; sub(/.*"p95_ms":/, "", p95); sub(/,.*/, "", p95)
  cpu = 0; if ($0 ~ /"binlogd":[0-9.]/) { cpu = $0; sub(/.*"cpu_us":\{[^}]*"binlogd":/, "", cpu); sub(/[,}].*/, "", cpu) }
  vals = 0; if ($0 ~ /values_proposed_total/) { vals = $0; sub(/.*"phxgo_paxos_values_proposed_total":/, "", vals); sub(/[,}].*/, "", vals) }
  s = substr(tag, 1, 1); r = substr(tag, 2)
  N[s] += n; P95[s, r] = p95; AVG[s, r] = avg; CPU[s] += cpu; V[s] += vals; R[r] = 1
  if (s != "S") printf "turn=%s txns=%d avg_ms=%.2f p95_ms=%.2f binlogd_us_per_txn=%.0f txn_per_value=%.2f\n", tag, n, avg, p95, cpu / n, n / (vals + 1e-9)
  else printf "turn=%s txns=%d avg_ms=%.2f p95_ms=%.2f\n", tag, n, avg, p95
} END {
  for (r in R) { k++; ap += P95["A", r] / P95["S", r]; bp += P95["B", r] / P95["S", r]; aa += AVG["A", r] / AVG["S", r]; ba += AVG["B", r] / AVG["S", r] }
  printf "ab a_p95_ratio=%.2f b_p95_ratio=%.2f a_avg_ratio=%.2f b_avg_ratio=%.2f a_binlogd_us=%.0f b_binlogd_us=%.0f a_txn_per_value=%.2f b_txn_per_value=%.2f\n",
    ap / k, bp / k, aa / k, ba / k, CPU["A"] / N["A"], CPU["B"] / N["B"], N["A"] / (V["A"] + 1e-9), N["B"] / (V["B"] + 1e-9)
}' "$OUT/results.jsonl" | tee "$OUT/summary.txt"
log "results in $OUT"
