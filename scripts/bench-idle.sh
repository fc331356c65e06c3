#!/usr/bin/env bash
# Idle CPU of a 3-node phxgo cluster's binlogds and proxies, for two builds
# measured in one run (issue 19: the proxies' status polling was the
# largest idle cost). One cluster directory; its processes are restarted
# from BIN_A's and BIN_B's binaries in turns (the data is kept), and each
# turn counts the CPU time (utime+stime from /proc) the three binlogds
# and the three sqlproxies spend in IDLE_SECONDS with no client, after
# SETTLE_SECONDS of quiet. Prints each turn and last
#   idle_binlogd_ratio=<B/A> idle_proxy_ratio=<B/A> idle_ratio=<B/A>
# (sums over the turns). The host is shared: read the ratios, not the
# absolute figures.
#
# Usage: scripts/bench-idle.sh BIN_A BIN_B   (directories with binlogd,
# sqlproxy and phxcluster; e.g. a git worktree's bin/ and bin/)
# Knobs: IDLE_SECONDS (20), SETTLE_SECONDS (10), IDLE_ROUNDS (2),
#        IDLE_PORT (base port, 27000), IDLE_DIR (cluster directory; default
#        a temp dir, removed at exit)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BIN_A BIN_B" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd)
SECS=${IDLE_SECONDS:-20}
SETTLE=${SETTLE_SECONDS:-10}
ROUNDS=${IDLE_ROUNDS:-2}
PORT=${IDLE_PORT:-27000}
DIR=${IDLE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/phxgo-idle.XXXXXX")}
mkdir -p "$DIR"
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/phxgo-idle-logs.XXXXXX")
HZ=$(getconf CLK_TCK)
log() { printf '[idle %s] %s\n' "$(date +%T)" "$*" >&2; }

cleanup() {
  "$B/phxcluster" down -dir "$DIR" -base-port "$PORT" >/dev/null 2>&1 || true
  [ -n "${IDLE_DIR:-}" ] || rm -rf "$DIR"
  rm -rf "$LOGS"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ticks() { # sum of utime+stime of the pids in the files given
  local sum=0 f pid
  for f in "$@"; do
    pid=$(cat "$f" 2>/dev/null) || continue
    [ -r "/proc/$pid/stat" ] || continue
    # fields 14 and 15 after the ")" of the command name
    sum=$((sum + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
  done
  echo "$sum"
}

declare -A bl px
for v in A B; do bl[$v]=0 px[$v]=0; done
for r in $(seq "$ROUNDS"); do
  for v in A B; do
    bin=$A
    [ "$v" = B ] && bin=$B
    log "round $r: build $v ($bin)"
    "$bin/phxcluster" down -dir "$DIR" -base-port "$PORT" >/dev/null 2>&1 || true
    "$bin/phxcluster" up -dir "$DIR" -base-port "$PORT" -bin "$bin" >"$LOGS/up-$v-$r.txt" 2>&1 ||
      { cat "$LOGS/up-$v-$r.txt" >&2; exit 1; }
    sleep "$SETTLE"
    bfiles=("$DIR"/node{1,2,3}/binlogd.pid) pfiles=("$DIR"/node{1,2,3}/sqlproxy.pid)
    b0=$(ticks "${bfiles[@]}") p0=$(ticks "${pfiles[@]}")
    n0=$(for f in "${bfiles[@]}"; do ticks "$f"; done)
    sleep "$SECS"
    b1=$(ticks "${bfiles[@]}") p1=$(ticks "${pfiles[@]}")
    n1=$(for f in "${bfiles[@]}"; do ticks "$f"; done)
    db=$((b1 - b0)) dp=$((p1 - p0))
    bl[$v]=$((bl[$v] + db)) px[$v]=$((px[$v] + dp))
    # each binlogd's ms/s too (node1..3; the leader costs most)
    each=$(paste <(echo "$n0") <(echo "$n1") | awk -v hz="$HZ" -v s="$SECS" '{ printf "%s%.1f", (NR>1?",":""), ($2-$1)*1000/hz/s }')
    awk -v v="$v" -v r="$r" -v b="$db" -v p="$dp" -v hz="$HZ" -v s="$SECS" -v e="$each" \
      'BEGIN { printf "round=%d build=%s binlogds_ms_per_s=%.1f each=%s proxies_ms_per_s=%.1f\n", r, v, b*1000/hz/s, e, p*1000/hz/s }'
  done
done
awk -v ba="${bl[A]}" -v bb="${bl[B]}" -v pa="${px[A]}" -v pb="${px[B]}" 'BEGIN {
  printf "idle_binlogd_ratio=%.3f idle_proxy_ratio=%.3f idle_ratio=%.3f\n",
    (ba ? bb/ba : 0), (pa ? pb/pa : 0), ((ba+pa) ? (bb+pb)/(ba+pa) : 0) }'
