#!/usr/bin/env bash
# Paxos leadership under CPU overload, for one or two builds in turns.
# For each build, one 3-node phxcluster (no data kept between builds) gets
# for OVERLOAD_SECONDS: 16 point-select threads through each node's proxy,
# inserts at 50 tps through one proxy, and two busy loops. This is far more
# than the host's cores. A binlogd that the kernel leaves without the CPU
# for longer than an election timeout loses the Paxos leadership (README
# "CPU priority"). Prints per build the leader changes each node saw, the
# step-downs by cause, the rejected batches and the load carried, and last
#   overload_<tag> leader_changes=<max over nodes> step_downs=<sum> rejected_batches=<sum> point_qps=<sum> insert_tps=<n>
# The host is shared: compare builds run by the same invocation.
#
# Usage: scripts/bench-overload.sh BIN_A [BIN_B]   (directories with binlogd,
# sqlproxy and phxcluster, e.g. bin/ after make build)
# Knobs: OVERLOAD_SECONDS (240), OVERLOAD_PORT (36000), OVERLOAD_HOGS (2),
#        OVERLOAD_THREADS (16 per proxy)
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 BIN_A [BIN_B]" >&2; exit 2; }
command -v sysbench >/dev/null || { echo "bench-overload: sysbench not installed (scripts/install-deps.sh)" >&2; exit 1; }
SECS=${OVERLOAD_SECONDS:-240} PORT=${OVERLOAD_PORT:-36000} HOGS=${OVERLOAD_HOGS:-2} THR=${OVERLOAD_THREADS:-16}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/phxgo-overload.XXXXXX")
BIN=
log() { printf '[overload %s] %s\n' "$(date +%T)" "$*" >&2; }
cleanup() {
  pkill -P $$ 2>/dev/null || true
  [ -z "$BIN" ] || "$BIN/phxcluster" down -dir "$DIR/c" -base-port "$PORT" >/dev/null 2>&1 || true
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
jf() { grep -o "\"$2\": *\"[^\"]*\"" "$1" | sed 's/.*: *"\(.*\)"/\1/'; }
# metric NAME ADDR: the sum of NAME's samples on one node's /metrics.
metric() { curl -s "http://$2/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2 } END { printf "%d", s }'; }
causes() { curl -s "http://$1/metrics" | awk '/^phxgo_paxos_step_downs_total\{/ && $2 > 0 { sub(/.*cause="/, "", $1); sub(/".*/, "", $1); printf "%s%s=%d", sep, $1, $2; sep = "," }'; }

turn() { # turn TAG BIN
  local tag=$1 i pids=()
  BIN=$(cd "$2" && pwd)
  rm -rf "$DIR/c"
  "$BIN/phxcluster" up -dir "$DIR/c" -base-port "$PORT" -bin "$BIN" >"$DIR/up-$tag.txt" 2>&1 ||
    { cat "$DIR/up-$tag.txt" >&2; exit 1; }
  local pass; pass=$(jf "$DIR/c/cluster.json" app_password)
  mapfile -t px < <(jf "$DIR/c/cluster.json" proxy_addr)
  mapfile -t ht < <(jf "$DIR/c/cluster.json" http_addr)
  local sb=(--db-driver=mysql --mysql-db=sbtest --tables=4 --table-size=10000 --db-ps-mode=auto --mysql-user=app --mysql-password="$pass")
  mariadb -h"${px[0]%:*}" -P"${px[0]##*:}" -uapp -p"$pass" -e 'CREATE DATABASE IF NOT EXISTS sbtest'
  sysbench oltp_common "${sb[@]}" --mysql-host="${px[0]%:*}" --mysql-port="${px[0]##*:}" --threads=1 prepare >/dev/null
  local before=() rej0=0
  for i in 0 1 2; do
    before+=("$(metric phxgo_paxos_leader_changes_total "${ht[$i]}")")
    rej0=$((rej0 + $(metric phxgo_capture_rejected_batches_total "${ht[$i]}")))
  done
  log "$tag: $SECS s of point selects ($THR threads per proxy), inserts at 50 tps, $HOGS busy loops"
  for i in 0 1 2; do
    sysbench oltp_point_select "${sb[@]}" --mysql-host="${px[$i]%:*}" --mysql-port="${px[$i]##*:}" \
      --threads="$THR" --time="$SECS" run >"$DIR/point-$tag-$i.txt" 2>&1 &
    pids+=($!)
  done
  sysbench oltp_insert "${sb[@]}" --mysql-host="${px[1]%:*}" --mysql-port="${px[1]##*:}" \
    --threads=4 --rate=50 --time="$SECS" run >"$DIR/insert-$tag.txt" 2>&1 &
  pids+=($!)
  for i in $(seq "$HOGS"); do timeout "$SECS" sh -c 'while :; do :; done' & pids+=($!); done
  wait "${pids[@]}" || true
  local changes=() maxc=0 steps=0 rej=0 c
  for i in 0 1 2; do
    c=$(( $(metric phxgo_paxos_leader_changes_total "${ht[$i]}") - before[i] ))
    changes+=("$c"); [ "$c" -gt "$maxc" ] && maxc=$c
    steps=$((steps + $(metric phxgo_paxos_step_downs_total "${ht[$i]}")))
    rej=$((rej + $(metric phxgo_capture_rejected_batches_total "${ht[$i]}")))
    log "$tag node $((i + 1)): leader changes +$c, step-downs $(causes "${ht[$i]}")"
  done
  rej=$((rej - rej0))
  local qps tps
  qps=$(cat "$DIR"/point-"$tag"-*.txt | awk '/queries:/ { gsub(/[(]/, "", $3); s += $3 } END { printf "%d", s }')
  tps=$(awk '/transactions:/ { gsub(/[(]/, "", $3); printf "%d", $3 }' "$DIR/insert-$tag.txt")
  echo "overload_$tag leader_changes=$maxc step_downs=$steps rejected_batches=$rej point_qps=$qps insert_tps=$tps"
  "$BIN/phxcluster" down -dir "$DIR/c" -base-port "$PORT" >/dev/null 2>&1 || true
}

turn A "$1"
[ $# -lt 2 ] || turn B "$2"
