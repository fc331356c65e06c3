#!/usr/bin/env bash
# binlogd's CPU per transaction by node role, for two builds measured in
# one run (issue 19). One 3-node phxcluster (no proxies) is restarted from
# BIN_A's and BIN_B's binaries in turns (the data is kept); each turn runs
# sysbench oltp_insert straight to the master's MariaDB through
# `sqlbench run`, which counts each process's utime+stime over the run and
# the replicas' catch-up. With PROFILE=1 it also saves a CPU profile of the
# master's and one replica's binlogd (/debug/pprof, on in a local
# cluster) per turn in OUT. Prints each turn and last
#   master_ratio=<B/A> replica_ratio=<B/A> binlogd_ratio=<B/A>
# of µs per transaction summed over the turns (mariadbd_ratio: the three
# MariaDB servers'), and each turn's MariaDB CPU by role and catch-up. The host is shared: read
# the ratios, not the absolute figures.
#
# Usage: scripts/bench-binlogd.sh BIN_A BIN_B   (directories with binlogd,
# sqlproxy, phxcluster and sqlbench)
# Knobs: ROUNDS (2), SECONDS_PER_RUN (20), THREADS (16), RATE (none:
#        closed loop; e.g. 300 tps), PORT (31000),
#        PROFILE (0), OUT (a temp dir, kept), BB_DIR (cluster directory;
#        default a temp dir, removed at exit). A's and B's environment
#        can differ: ENV_A / ENV_B (e.g. ENV_B=GOMAXPROCS=1).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BIN_A BIN_B" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd)
ROUNDS=${ROUNDS:-2} SECS=${SECONDS_PER_RUN:-20} THR=${THREADS:-16} PORT=${PORT:-31000} PROFILE=${PROFILE:-0}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/phxgo-bb-out.XXXXXX")}
DIR=${BB_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/phxgo-bb.XXXXXX")}
mkdir -p "$OUT" "$DIR"
log() { printf '[bench-binlogd %s] %s\n' "$(date +%T)" "$*" >&2; }
cleanup() {
  "$B/phxcluster" down -dir "$DIR" -base-port "$PORT" >/dev/null 2>&1 || true
  [ -n "${BB_DIR:-}" ] || rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
jf() { grep -o "\"$2\": *\"[^\"]*\"" "$1" | sed 's/.*: *"\(.*\)"/\1/'; } # every value of "KEY" in FILE
SB=(--db-driver=mysql --mysql-db=sbtest --tables=4 --table-size=10000 --db-ps-mode=auto)
# RATE: a fixed transaction rate (sysbench --rate) instead of a closed
# loop, so both builds carry the same load and their idle costs are
# spread over the same number of transactions.
RUN_SB=("${SB[@]}")
[ -n "${RATE:-}" ] && RUN_SB+=(--rate="$RATE")

turn() { # turn TAG BIN ENV
  local tag=$1 bin=$2 env=$3 m=-1 i t
  "$bin/phxcluster" down -dir "$DIR" -base-port "$PORT" >/dev/null 2>&1 || true
  env $env "$bin/phxcluster" up -dir "$DIR" -base-port "$PORT" -bin "$bin" -proxy=false >"$OUT/up-$tag.txt" 2>&1 ||
    { cat "$OUT/up-$tag.txt" >&2; exit 1; }
  local pass; pass=$(jf "$DIR/cluster.json" app_password)
  export SQLBENCH_PASSWORD=$pass
  mapfile -t my < <(jf "$DIR/cluster.json" mysql_addr)
  mapfile -t bl < <(jf "$DIR/cluster.json" binlogd_addr)
  mapfile -t ht < <(jf "$DIR/cluster.json" http_addr)
  for t in $(seq 120); do
    for i in 0 1 2; do
      "$bin/binlogd" status -addr "${bl[$i]}" -tls-dir "$DIR/tls" 2>/dev/null | grep -qE '^role +master$' && m=$i
    done
    [ "$m" -ge 0 ] && break
    sleep 1
  done
  [ "$m" -ge 0 ] || { log "no master after 120 s"; exit 1; }
  local r1=$(((m + 1) % 3)) r2=$(((m + 2) % 3))
  if [ ! -f "$DIR/prepared" ]; then
    mariadb -h"${my[$m]%:*}" -P"${my[$m]##*:}" -uapp -p"$pass" -e 'CREATE DATABASE IF NOT EXISTS sbtest'
    sysbench oltp_common "${SB[@]}" --mysql-host="${my[$m]%:*}" --mysql-port="${my[$m]##*:}" --mysql-user=app \
      --mysql-password="$pass" --threads=1 prepare >"$OUT/prepare.txt" 2>&1
    touch "$DIR/prepared"
  fi
  "$bin/sqlbench" waitapplied -master "${my[$m]}" -replicas "${my[$r1]},${my[$r2]}" >/dev/null
  local mp p1 p2 mm m1 m2
  mp=$(cat "$DIR/node$((m + 1))/binlogd.pid") p1=$(cat "$DIR/node$((r1 + 1))/binlogd.pid") p2=$(cat "$DIR/node$((r2 + 1))/binlogd.pid")
  mm=$(cat "$DIR/node$((m + 1))/mysql/mysqld.pid") m1=$(cat "$DIR/node$((r1 + 1))/mysql/mysqld.pid") m2=$(cat "$DIR/node$((r2 + 1))/mysql/mysqld.pid")
  if [ "$PROFILE" = 1 ]; then
    curl -s -o "$OUT/$tag-master.prof" "http://${ht[$m]}/debug/pprof/profile?seconds=$((SECS + 4))" &
    curl -s -o "$OUT/$tag-replica.prof" "http://${ht[$r1]}/debug/pprof/profile?seconds=$((SECS + 4))" &
  fi
  "$bin/sqlbench" run -label "$tag" -test oltp_insert -threads "$THR" -seconds "$SECS" -target "${my[$m]}" \
    -master "${my[$m]}" -replicas "${my[$r1]},${my[$r2]}" \
    -pids "master_binlogd=$mp" -pids "replica_binlogd=$p1,$p2" \
    -pids "master_mariadbd=$mm" -pids "replica_mariadbd=$m1,$m2" \
    -out "$OUT/results.jsonl" -log "$OUT/sysbench-$tag.txt" -- "${RUN_SB[@]}" >&2
  wait
}

for r in $(seq "$ROUNDS"); do
  turn "A$r" "$A" "${ENV_A:-}"
  turn "B$r" "$B" "${ENV_B:-}"
done
# µs per transaction by role, per turn and summed per build.
awk '{
  tag = $0; sub(/.*"label":"/, "", tag); sub(/".*/, "", tag)
  n = $0; sub(/.*"txns":/, "", n); sub(/,.*/, "", n)
  mb = $0; sub(/.*"master_binlogd":/, "", mb); sub(/[,}].*/, "", mb)
  rb = $0; sub(/.*"replica_binlogd":/, "", rb); sub(/[,}].*/, "", rb)
  mm = $0; sub(/.*"master_mariadbd":/, "", mm); sub(/[,}].*/, "", mm)
  rm = $0; sub(/.*"replica_mariadbd":/, "", rm); sub(/[,}].*/, "", rm)
  cu = $0; sub(/.*"catchup_s":/, "", cu); sub(/,.*/, "", cu)
  b = substr(tag, 1, 1); txns[b] += n; mcpu[b] += mb; rcpu[b] += rb; dcpu[b] += mm + rm
  printf "turn=%s txns=%d master_us_per_txn=%.0f replica_us_per_txn=%.0f binlogd_us_per_txn=%.0f master_mariadbd_us_per_txn=%.0f replica_mariadbd_us_per_txn=%.0f catchup_s=%.2f\n", tag, n, mb/n, rb/2/n, (mb+rb)/n, mm/n, rm/2/n, cu
} END {
  ma = mcpu["A"]/txns["A"]; mbb = mcpu["B"]/txns["B"]; ra = rcpu["A"]/txns["A"]; rbb = rcpu["B"]/txns["B"]
  printf "master_ratio=%.3f replica_ratio=%.3f binlogd_ratio=%.3f mariadbd_ratio=%.3f\n", mbb/ma, rbb/ra, (mbb+rbb)/(ma+ra), (dcpu["B"]/txns["B"])/(dcpu["A"]/txns["A"])
}' "$OUT/results.jsonl"
log "results and profiles in $OUT"
