#!/usr/bin/env bash
# make bench-big: one huge transaction and one big LOAD DATA through phxgo,
# side by side with plain MariaDB semi-sync (issue 20.4).
#
# Starts, on loopback only, and tears down at exit:
#   (a) a 3-node phxgo cluster (bin/phxcluster up, TLS on), and
#   (b) the baseline: 3 plain MariaDB servers (bin/sqlbench baseline-up,
#       the same my.cnf as a phxgo node, semi-sync master AFTER_SYNC, two
#       durable semi-sync replicas).
# On each, as root over the master's socket:
#   txn   BEGIN; BENCH_TXN_MB INSERTs of one 1 MiB row each; COMMIT
#         (the statements are small, REPEAT() builds the rows on the
#         server, so the binlog holds BENCH_TXN_MB row events of 1 MiB)
#   load  LOAD DATA INFILE of a generated BENCH_LOAD_MB file (lines of
#         ~1 KiB) from the master's secure_file_priv directory: one
#         statement, one transaction
# and times the COMMIT (server clock, NOW(6) around it), the whole
# statement run, and the catch-up until every replica applied it.
# Meanwhile each phxgo binlogd's peak RSS (VmHWM, reset by clear_refs
# before each run) and sampled RssAnon are recorded.
#
# Last line:
#   bench_big txn_mb= phx_commit_s= base_commit_s= commit_ratio= phx_txn_s= base_txn_s= txn_ratio=
#     catchup_phx_s= catchup_base_s= load_mb= phx_load_s= base_load_s= load_ratio=
#     binlogd_peak_rss_mb= binlogd_rss_growth_mb= binlogd_anon_growth_mb=
# (ratios are phxgo / baseline; RSS figures are the worst binlogd over
# both runs). Compare builds: BENCH_BIN=/path/to/old/bin runs other binaries.
#
# Knobs: BENCH_TXN_MB (default 256), BENCH_LOAD_MB (default 1024; 0 skips),
# BENCH_PORT (default 24000), BENCH_LEASE (default 5s), BENCH_BIN (default:
# build into bin/), BENCH_DIR / BENCH_KEEP=1 (keep the work directory),
# BENCH_PROFILE=1: CPU profiles of the master's and a replica's binlogd
# over the phxgo txn (and load), heap profiles at its end, kept in
# $WORK/prof (the work directory is then kept).
# Needs root and MariaDB (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

TXN_MB=${BENCH_TXN_MB:-256}
LOAD_MB=${BENCH_LOAD_MB:-1024}
PORT=${BENCH_PORT:-24000}
LEASE=${BENCH_LEASE:-5s}
PHX_BASE=$((PORT + 100))

log() { printf '[bench-big %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

for t in mariadb mariadbd; do command -v "$t" >/dev/null || die "$t is not installed (scripts/install-deps.sh)"; done
if [ -n "${BENCH_BIN:-}" ]; then
  BIN=$(cd "$BENCH_BIN" && pwd)
else
  BIN=$PWD/bin
  mkdir -p bin
  for c in binlogd sqlproxy phxcluster sqlbench; do
    go build -o bin/ "./cmd/$c" 2>/dev/null || { [ -x "bin/$c" ] || die "cannot build cmd/$c"; log "WARNING: cmd/$c does not build now; using the existing bin/$c"; }
  done
fi
# sqlbench is only the baseline's launcher: take it from bin/ when BENCH_BIN has none.
SQLBENCH=$BIN/sqlbench
[ -x "$SQLBENCH" ] || SQLBENCH=$PWD/bin/sqlbench

if [ -n "${BENCH_DIR:-}" ]; then mkdir -p "$BENCH_DIR" && WORK=$BENCH_DIR; else WORK=$(mktemp -d "${TMPDIR:-/tmp}/phxgo-bench-big.XXXXXX"); fi
WORK=$(cd "$WORK" && pwd)
PHX_DIR=$WORK/phxgo BASE_DIR=$WORK/baseline SAMPLER=

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -z "$SAMPLER" ] || kill "$SAMPLER" 2>/dev/null || true
  # Each binlogd's largest sampled RssAnon (MiB), also when a run failed.
  [ ! -s "$WORK/rss.txt" ] || awk '$1 == "anon" && $3 > m[$2] { m[$2] = $3 } END { for (p in m) printf "binlogd pid %s: peak RssAnon %d MiB\n", p, m[p] / 1024 }' "$WORK/rss.txt" >&2
  [ ! -d "$PHX_DIR" ] || "$BIN/phxcluster" down -dir "$PHX_DIR" -base-port "$PHX_BASE" >/dev/null 2>&1 || log "phxcluster down failed"
  [ ! -d "$BASE_DIR" ] || "$SQLBENCH" baseline-down -dir "$BASE_DIR" >/dev/null 2>&1 || log "baseline-down failed"
  if [ "${BENCH_KEEP:-0}" = 1 ] || [ -n "${BENCH_DIR:-}" ]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "starting phxgo (3 nodes) in $PHX_DIR with $BIN"
"$BIN/phxcluster" up -dir "$PHX_DIR" -base-port "$PHX_BASE" -bin "$BIN" -lease "$LEASE" -proxy=false >"$WORK/phxcluster-up.txt" 2>&1 ||
  { cat "$WORK/phxcluster-up.txt" >&2; die "phxcluster up failed"; }
json_field() { grep -o "\"$2\": *\"[^\"]*\"" "$1" | sed 's/.*: *"\(.*\)"/\1/'; }
APP_PASS=$(json_field "$PHX_DIR/cluster.json" app_password)
mapfile -t PHX_MYSQL < <(json_field "$PHX_DIR/cluster.json" mysql_addr)
mapfile -t PHX_BINLOGD < <(json_field "$PHX_DIR/cluster.json" binlogd_addr)
mapfile -t PHX_HTTP < <(json_field "$PHX_DIR/cluster.json" http_addr)
log "starting the baseline (semi-sync master, 2 replicas) in $BASE_DIR"
export SQLBENCH_PASSWORD=$APP_PASS
BASE_ADDR=$("$SQLBENCH" baseline-up -dir "$BASE_DIR" -base-port "$PORT" -app-password "$APP_PASS")
BASE_REPLICAS=127.0.0.1:$((PORT + 2)),127.0.0.1:$((PORT + 3))

MASTER=-1
for _ in $(seq 600); do
  for i in 0 1 2; do
    "$BIN/binlogd" status -addr "${PHX_BINLOGD[$i]}" -tls-dir "$PHX_DIR/tls" 2>/dev/null | grep -qE '^role +master$' && MASTER=$i
  done
  [ "$MASTER" -lt 0 ] || break
  sleep 0.5
done
[ "$MASTER" -ge 0 ] || die "no phxgo master"
PHX_SOCK=$PHX_DIR/node$((MASTER + 1))/mysql/mysqld.sock
PHX_FILES=$PHX_DIR/node$((MASTER + 1))/mysql/files
PHX_REPLICAS=$(for i in 0 1 2; do [ "$i" -eq "$MASTER" ] || echo "${PHX_MYSQL[$i]}"; done | paste -sd,)
BASE_SOCK=$BASE_DIR/node1/mysqld.sock
BASE_FILES=$BASE_DIR/node1/files
BINLOGD_PIDS=$(cat "$PHX_DIR"/node{1,2,3}/binlogd.pid)
log "phxgo master: node $((MASTER + 1)); binlogd pids: $(echo $BINLOGD_PIDS)"

PROFS=()
profile_start() { # profile_start NAME SECONDS: CPU profiles of the master's and one replica's binlogd
  [ "${BENCH_PROFILE:-0}" = 1 ] || return 0
  mkdir -p "$WORK/prof"
  BENCH_KEEP=1
  local r=$(((MASTER + 1) % 3))
  curl -s -o "$WORK/prof/$1-master.cpu" "http://${PHX_HTTP[$MASTER]}/debug/pprof/profile?seconds=$2" & PROFS+=($!)
  curl -s -o "$WORK/prof/$1-replica.cpu" "http://${PHX_HTTP[$r]}/debug/pprof/profile?seconds=$2" & PROFS+=($!)
}
profile_end() { # profile_end NAME: heap profiles, then waits for the CPU ones
  [ "${BENCH_PROFILE:-0}" = 1 ] || return 0
  local r=$(((MASTER + 1) % 3))
  curl -s -o "$WORK/prof/$1-master.heap" "http://${PHX_HTTP[$MASTER]}/debug/pprof/heap"
  curl -s -o "$WORK/prof/$1-replica.heap" "http://${PHX_HTTP[$r]}/debug/pprof/heap"
  wait "${PROFS[@]}" 2>/dev/null || true
  PROFS=()
  log "profiles in $WORK/prof ($1-*): go tool pprof -top $BIN/binlogd FILE"
}

sql() { mariadb -S "$1" -u root -N -B -e "$2"; } # sql SOCKET STATEMENTS
for s in "$PHX_SOCK" "$BASE_SOCK"; do
  sql "$s" "CREATE DATABASE IF NOT EXISTS app_big; CREATE TABLE app_big.t (id INT PRIMARY KEY, pad LONGBLOB);
            CREATE TABLE app_big.l (id BIGINT PRIMARY KEY, v VARCHAR(1100))"
done

kib() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
RSS_LOG=$WORK/rss.txt
: >"$RSS_LOG"
start_sampler() { # resets VmHWM, records each binlogd's starting RSS and samples RssAnon
  local p
  for p in $BINLOGD_PIDS; do
    echo 5 >"/proc/$p/clear_refs" 2>/dev/null || true
    echo "start $p $(kib "$p" VmRSS) $(kib "$p" RssAnon)" >>"$RSS_LOG"
  done
  (while :; do for p in $BINLOGD_PIDS; do echo "anon $p $(kib "$p" RssAnon)"; done; sleep 0.2; done) >>"$RSS_LOG" &
  SAMPLER=$!
}
stop_sampler() {
  local p
  kill "$SAMPLER" 2>/dev/null || true
  wait "$SAMPLER" 2>/dev/null || true
  SAMPLER=
  for p in $BINLOGD_PIDS; do echo "peak $p $(kib "$p" VmHWM)" >>"$RSS_LOG"; done
}

# timed NAME SOCKET STATEMENTS: prints "commit_s total_s" (COMMIT's own time by the server's clock).
timed() {
  local t0 out
  t0=$(date +%s.%N)
  out=$(sql "$2" "$3; SELECT UNIX_TIMESTAMP(NOW(6)) INTO @t0; COMMIT; SELECT UNIX_TIMESTAMP(NOW(6)) - @t0") || return 1
  echo "$(tail -1 <<<"$out") $(echo "$(date +%s.%N) - $t0" | bc)"
}
catchup() { # catchup MASTER_ADDR REPLICAS: seconds until every replica applied the master's position
  local t0
  t0=$(date +%s.%N)
  "$SQLBENCH" waitapplied -master "$1" -replicas "$2" >/dev/null || return 1
  echo "$(date +%s.%N) - $t0" | bc
}

TXN="SET SESSION autocommit=0; BEGIN"
for i in $(seq 1 "$TXN_MB"); do TXN+="; INSERT INTO app_big.t VALUES ($i, REPEAT(CHAR(65 + $i % 26), 1048576))"; done

log "txn: $TXN_MB MiB on the baseline"
out=$(timed baseline "$BASE_SOCK" "$TXN") || die "baseline txn failed"
read -r BASE_COMMIT BASE_TXN <<<"$out"
CATCH_BASE=$(catchup "$BASE_ADDR" "$BASE_REPLICAS") || die "baseline replicas did not catch up"
log "txn: $TXN_MB MiB on phxgo"
start_sampler
profile_start txn "${BENCH_PROFILE_S:-30}"
out=$(timed phxgo "$PHX_SOCK" "$TXN") || die "phxgo txn failed (logs in $PHX_DIR/node*/binlogd.log)"
read -r PHX_COMMIT PHX_TXN <<<"$out"
CATCH_PHX=$(catchup "${PHX_MYSQL[$MASTER]}" "$PHX_REPLICAS") || die "phxgo replicas did not catch up"
stop_sampler
profile_end txn
for s in "$PHX_SOCK" "$BASE_SOCK"; do
  n=$(sql "$s" "SELECT COUNT(*), SUM(LENGTH(pad)) FROM app_big.t")
  [ "$n" = "$(printf '%s\t%s' "$TXN_MB" $((TXN_MB << 20)))" ] || die "$s: app_big.t holds $n"
done
log "txn: commit phxgo ${PHX_COMMIT}s baseline ${BASE_COMMIT}s; statements+commit ${PHX_TXN}s vs ${BASE_TXN}s; catch-up ${CATCH_PHX}s vs ${CATCH_BASE}s"

PHX_LOAD=0 BASE_LOAD=0
if [ "$LOAD_MB" -gt 0 ]; then
  gen="$WORK/load.csv"
  log "load: generating $LOAD_MB MiB"
  # id, then a 1000-byte value: 1 KiB lines.
  awk -v n=$((LOAD_MB * 1024)) 'BEGIN { pad = sprintf("%1000s", ""); gsub(/ /, "x", pad); for (i = 1; i <= n; i++) printf "%d,%s\n", i, pad }' >"$gen"
  for d in "$PHX_FILES" "$BASE_FILES"; do
    cp "$gen" "$d/load.csv" && chmod 644 "$d/load.csv" && chown --reference="$d" "$d/load.csv"
  done
  rm -f "$gen"
  LOAD="BEGIN; LOAD DATA INFILE '%s/load.csv' INTO TABLE app_big.l FIELDS TERMINATED BY ',' (id, v)"
  log "load: $LOAD_MB MiB on the baseline"
  out=$(timed baseline "$BASE_SOCK" "$(printf "$LOAD" "$BASE_FILES")") || die "baseline load failed"
  read -r _ BASE_LOAD <<<"$out"
  catchup "$BASE_ADDR" "$BASE_REPLICAS" >/dev/null || die "baseline replicas did not catch up"
  log "load: $LOAD_MB MiB on phxgo"
  start_sampler
  profile_start load "${BENCH_PROFILE_S:-30}"
  out=$(timed phxgo "$PHX_SOCK" "$(printf "$LOAD" "$PHX_FILES")") || die "phxgo load failed (logs in $PHX_DIR/node*/binlogd.log)"
  read -r _ PHX_LOAD <<<"$out"
  catchup "${PHX_MYSQL[$MASTER]}" "$PHX_REPLICAS" >/dev/null || die "phxgo replicas did not catch up"
  stop_sampler
  profile_end load
  rm -f "$PHX_FILES/load.csv" "$BASE_FILES/load.csv"
  log "load: phxgo ${PHX_LOAD}s baseline ${BASE_LOAD}s"
fi

# Worst binlogd: peak VmHWM, peak growth over its start RSS, peak RssAnon growth.
read -r PEAK GROWTH ANON <<<"$(awk '
  $1 == "start" { rss[$2] = $3; anon0[$2] = $4 }
  $1 == "anon"  { if ($3 - anon0[$2] > ag) ag = $3 - anon0[$2] }
  $1 == "peak"  { if ($3 > pk) pk = $3; if ($3 - rss[$2] > g) g = $3 - rss[$2] }
  END { printf "%d %d %d\n", pk / 1024, g / 1024, ag / 1024 }' "$RSS_LOG")"
ratio() { echo "scale=2; $1 / $2" | bc; }
printf 'bench_big txn_mb=%d phx_commit_s=%.2f base_commit_s=%.2f commit_ratio=%s phx_txn_s=%.2f base_txn_s=%.2f txn_ratio=%s catchup_phx_s=%.2f catchup_base_s=%.2f load_mb=%d phx_load_s=%.2f base_load_s=%.2f load_ratio=%s binlogd_peak_rss_mb=%d binlogd_rss_growth_mb=%d binlogd_anon_growth_mb=%d\n' \
  "$TXN_MB" "$PHX_COMMIT" "$BASE_COMMIT" "$(ratio "$PHX_COMMIT" "$BASE_COMMIT")" "$PHX_TXN" "$BASE_TXN" "$(ratio "$PHX_TXN" "$BASE_TXN")" \
  "$CATCH_PHX" "$CATCH_BASE" "$LOAD_MB" "$PHX_LOAD" "$BASE_LOAD" "$( [ "$LOAD_MB" -gt 0 ] && ratio "$PHX_LOAD" "$BASE_LOAD" || echo 0)" \
  "$PEAK" "$GROWTH" "$ANON"
