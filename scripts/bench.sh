#!/usr/bin/env bash
# Side-by-side SQL benchmark of issue 8 (make bench-sql).
#
# In one run on this machine it starts
#   (a) a baseline: 3 plain MariaDB servers in semi-sync replication
#       (1 master, 2 semi-sync replicas, AFTER_SYNC, wait_no_slave=ON), with
#       the same my.cnf as a phxgo node (sync_binlog=1,
#       innodb_flush_log_at_trx_commit=1, ...), started by cmd/sqlbench with
#       the project's launcher binlogd/mysqld;
#   (b) a 3-node phxgo cluster with its proxies (bin/phxcluster up);
# then runs sysbench oltp_point_select, oltp_read_write and oltp_insert at
# each thread count against: the baseline master directly (baseline), phxgo
# through the master node's sqlproxy (phxgo-proxy), and phxgo directly on
# the master MariaDB (phxgo-direct; isolates the proxy's cost). The three
# targets take turns, and the turn order rotates, to spread the machine's
# noise. It prints a table of QPS, TPS, avg and p95 latency and the ratios,
# a CPU table (CPU ms per 1000 queries of each process kind), and last the
# line `insert_ratio=<n> rw_ratio=<n> point_select_ratio=<n>`.
#
# Knobs (environment):
#   BENCH_SECONDS   seconds per sysbench run (default 30; BENCH_QUICK=1: 10)
#   BENCH_THREADS   thread counts (default "16 64")
#   BENCH_TESTS     sysbench tests (default "oltp_point_select oltp_read_write oltp_insert")
#   BENCH_ROUNDS    repetitions of the whole matrix; the table shows medians (default 1)
#   BENCH_TABLES, BENCH_TABLE_SIZE   sysbench data (default 4 x 10000 rows)
#   BENCH_PS_MODE   sysbench --db-ps-mode: auto (prepared statements) or disable (default auto)
#   BENCH_PROXY     master (the master node's proxy) or other (a non-master node's, one more hop); default master
#   BENCH_PORT      base port (default 23000): baseline on +1..+3, phxgo on +110..+136
#   BENCH_LEASE     phxgo lease (default 5s)
#   BENCH_INSECURE=1  run phxgo without TLS (phxcluster up -insecure), to measure what TLS costs
#   BENCH_DIR       work directory (default: a new temp dir, removed at exit)
#   BENCH_KEEP=1    keep the work directory (logs, results)
# Needs root on Debian 12 (installs MariaDB and sysbench if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

if [ "${BENCH_QUICK:-0}" = 1 ]; then BENCH_SECONDS=${BENCH_SECONDS:-10}; fi
SECONDS_PER_RUN=${BENCH_SECONDS:-30}
THREADS=${BENCH_THREADS:-16 64}
TESTS=${BENCH_TESTS:-oltp_point_select oltp_read_write oltp_insert}
ROUNDS=${BENCH_ROUNDS:-1}
TABLES=${BENCH_TABLES:-4}
TABLE_SIZE=${BENCH_TABLE_SIZE:-10000}
PS_MODE=${BENCH_PS_MODE:-auto}
PROXY_CHOICE=${BENCH_PROXY:-master}
PORT=${BENCH_PORT:-23000}
LEASE=${BENCH_LEASE:-5s}
PHX_BASE=$((PORT + 100))
PHX_TLS=() # phxcluster up flags; the binlogd CLI's certificate flags are set after start
[ "${BENCH_INSECURE:-0}" = 1 ] && PHX_TLS=(-insecure)

log() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

# --- dependencies and binaries -------------------------------------------
scripts/install-deps.sh
command -v sysbench >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sysbench >/dev/null
}
mkdir -p bin
# Another package's work in progress may not build: then the binaries
# already in bin/ are used (make build refreshes them).
for c in binlogd sqlproxy phxcluster sqlbench; do
  go build -o bin/ "./cmd/$c" 2>"/tmp/bench-build-$$.txt" || {
    [ -x "bin/$c" ] || { cat "/tmp/bench-build-$$.txt" >&2; die "cannot build cmd/$c"; }
    log "WARNING: cmd/$c does not build now; using the existing bin/$c"
  }
done
rm -f "/tmp/bench-build-$$.txt"

for p in $((PORT + 1)) $((PORT + 2)) $((PORT + 3)) $((PHX_BASE + 10)) $((PHX_BASE + 20)) $((PHX_BASE + 30)); do
  if [ -n "$(ss -Hltn "sport = :$p")" ]; then die "port $p is in use; set BENCH_PORT"; fi
done

if [ -n "${BENCH_DIR:-}" ]; then
  WORK=$BENCH_DIR
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/phxgo-bench.XXXXXX")
fi
WORK=$(cd "$WORK" && pwd)
BASE_DIR=$WORK/baseline
PHX_DIR=$WORK/phxgo
RESULTS=$WORK/results.txt
CPU=$WORK/cpu.txt
: >"$RESULTS"
: >"$CPU"

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  log "cleaning up"
  if [ -f "$PHX_DIR/cluster.json" ] || [ -d "$PHX_DIR" ]; then
    bin/phxcluster down -dir "$PHX_DIR" -base-port "$PHX_BASE" >/dev/null 2>&1 || log "phxcluster down failed"
  fi
  if [ -d "$BASE_DIR" ]; then
    bin/sqlbench baseline-down -dir "$BASE_DIR" || log "baseline-down failed"
  fi
  if [ "${BENCH_KEEP:-0}" = 1 ] || [ -n "${BENCH_DIR:-}" ]; then
    log "work directory kept: $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- start both systems ----------------------------------------------------
log "starting phxgo (3 nodes, lease $LEASE) in $PHX_DIR"
bin/phxcluster up -dir "$PHX_DIR" -base-port "$PHX_BASE" -bin bin -lease "$LEASE" "${PHX_TLS[@]}" >"$WORK/phxcluster-up.txt" 2>&1 ||
  { cat "$WORK/phxcluster-up.txt" >&2; die "phxcluster up failed"; }
CLI_TLS=(-tls-dir "$PHX_DIR/tls") # the admin certificate phxcluster issued
[ "${BENCH_INSECURE:-0}" = 1 ] && CLI_TLS=(-insecure)

# json_field FILE KEY: every value of "KEY": "..." in FILE, in order.
json_field() { grep -o "\"$2\": *\"[^\"]*\"" "$1" | sed 's/.*: *"\(.*\)"/\1/'; }
# The app account's password: generated by phxgo's cluster; the baseline
# gets the same one, so both systems log in alike.
APP_PASS=$(json_field "$PHX_DIR/cluster.json" app_password)

log "starting baseline (semi-sync, 3 servers) in $BASE_DIR"
BASE_ADDR=$(bin/sqlbench baseline-up -dir "$BASE_DIR" -base-port "$PORT" -app-password "$APP_PASS")
log "baseline master: $BASE_ADDR"

mapfile -t PHX_MYSQL < <(json_field "$PHX_DIR/cluster.json" mysql_addr)
mapfile -t PHX_BINLOGD < <(json_field "$PHX_DIR/cluster.json" binlogd_addr)
mapfile -t PHX_PROXY < <(json_field "$PHX_DIR/cluster.json" proxy_addr)
[ ${#PHX_MYSQL[@]} -eq 3 ] || die "cluster.json: want 3 nodes, got ${#PHX_MYSQL[@]}"

# find_master: sets master (0-based node index), PHX_DIRECT (its MariaDB),
# PHX_PROXY_ADDR and PHX_REPLICAS from the nodes' own status; a failover
# during the run is counted and logged.
FAILOVERS=0
master=-1
find_master() {
  local i st old=$master deadline=$((SECONDS + 300))
  master=-1
  while [ "$master" -lt 0 ]; do
    for i in 0 1 2; do
      st=$(bin/binlogd status -addr "${PHX_BINLOGD[$i]}" "${CLI_TLS[@]}" 2>/dev/null || true)
      if grep -E '^role +master$' >/dev/null <<<"$st"; then master=$i; fi
    done
    if [ "$master" -lt 0 ] && [ $SECONDS -ge $deadline ]; then
      for i in 0 1 2; do bin/binlogd status -addr "${PHX_BINLOGD[$i]}" "${CLI_TLS[@]}" >&2 || true; done
      die "no phxgo node says role master for 300 s (statuses above; logs in $PHX_DIR/node*/binlogd.log)"
    fi
    [ "$master" -ge 0 ] || sleep 0.5
  done
  PHX_DIRECT=${PHX_MYSQL[$master]}
  if [ "$PROXY_CHOICE" = master ]; then
    PHX_PROXY_ADDR=${PHX_PROXY[$master]}
  else
    PHX_PROXY_ADDR=${PHX_PROXY[$(((master + 1) % 3))]}
  fi
  PHX_REPLICAS=()
  for i in 0 1 2; do [ "$i" -eq "$master" ] || PHX_REPLICAS+=("${PHX_MYSQL[$i]}"); done
  if [ "$old" -ge 0 ] && [ "$old" -ne "$master" ]; then
    FAILOVERS=$((FAILOVERS + 1))
    log "phxgo FAILOVER: master is now node $((master + 1)) (was node $((old + 1)))"
  fi
}
find_master
log "phxgo master: node $((master + 1)), mariadb $PHX_DIRECT, proxy used $PHX_PROXY_ADDR ($PROXY_CHOICE)"

host() { echo "${1%:*}"; }
port() { echo "${1##*:}"; }
sql() { # sql ADDR STATEMENT
  mariadb -h"$(host "$1")" -P"$(port "$1")" -uapp -p"$APP_PASS" -N -B -e "$2"
}

# --- processes and their CPU -----------------------------------------------
BASE_PIDS=()
for i in 1 2 3; do BASE_PIDS+=("$(cat "$BASE_DIR/node$i/mysqld.pid")"); done
phx_pids() { # reads the phxgo pids (a restarted mariadbd has a new one)
  PHX_MARIADBD=() PHX_BINLOGD_PID=() PHX_PROXY_PID=()
  local i
  for i in 1 2 3; do
    PHX_MARIADBD+=("$(cat "$PHX_DIR/node$i/mysql/mysqld.pid" 2>/dev/null || echo 0)")
    PHX_BINLOGD_PID+=("$(cat "$PHX_DIR/node$i/binlogd.pid" 2>/dev/null || echo 0)")
    PHX_PROXY_PID+=("$(cat "$PHX_DIR/node$i/sqlproxy.pid" 2>/dev/null || echo 0)")
  done
}

ticks() { # summed utime+stime of the pids, in clock ticks
  local t=0 p
  for p in "$@"; do
    if [ -r "/proc/$p/stat" ]; then
      t=$((t + $(awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$p/stat")))
    fi
  done
  echo "$t"
}
HZ=$(getconf CLK_TCK)
cpu_snapshot() {
  echo "$(ticks "${BASE_PIDS[0]}") $(ticks "${BASE_PIDS[@]:1}") $(ticks "${PHX_MARIADBD[$master]}")" \
    "$(ticks "${PHX_MARIADBD[@]}") $(ticks "${PHX_BINLOGD_PID[$master]}") $(ticks "${PHX_BINLOGD_PID[@]}")" \
    "$(ticks "${PHX_PROXY_PID[@]}") $(awk '/^cpu /{print $2+$3+$4+$6+$7+$8}' /proc/stat) $(flushes)"
}
# flushes: cache flushes (fsync, fdatasync) completed by the disk that
# holds the work directory (/proc/diskstats field 19; 0 if unknown).
DISK=$(basename "$(df --output=source "$WORK" | tail -1)")
flushes() { awk -v d="$DISK" '$3 == d {f = $19} END {print f + 0}' /proc/diskstats; }

# --- data ---------------------------------------------------------------------
# wait_caught_up MASTER REPLICA...: every replica's @@gtid_current_pos
# equals the master's @@gtid_binlog_pos (deadline 300 s), so a run does not
# pay for the previous run's replication lag.
wait_caught_up() {
  local m=$1 want got r deadline=$((SECONDS + 300))
  shift
  want=$(sql "$m" 'SELECT @@gtid_binlog_pos')
  for r in "$@"; do
    while got=$(sql "$r" 'SELECT @@gtid_current_pos' 2>/dev/null) && [ "$got" != "$want" ]; do
      [ $SECONDS -lt $deadline ] || die "replica $r did not catch up with $m ($got != $want)"
      sleep 0.5
    done
  done
}
BASE_REPLICAS=("127.0.0.1:$((PORT + 2))" "127.0.0.1:$((PORT + 3))")

SB_COMMON=(--db-driver=mysql --mysql-user=app --mysql-password="$APP_PASS" --mysql-db=sbtest
  --tables="$TABLES" --table-size="$TABLE_SIZE" --db-ps-mode="$PS_MODE")

# prepare NAME ADDR: creates the sysbench tables at ADDR.
prepare() {
  local out=$WORK/prepare-$1.txt a=$2
  sysbench oltp_common "${SB_COMMON[@]}" --mysql-host="$(host "$a")" --mysql-port="$(port "$a")" \
    --threads=1 prepare >"$out" 2>&1 && return 0
  log "sysbench prepare on $1 ($a) failed: $(grep FATAL "$out" | head -1 | cut -c1-200)"
  sysbench oltp_common "${SB_COMMON[@]}" --mysql-host="$(host "$a")" --mysql-port="$(port "$a")" \
    cleanup >/dev/null 2>&1 || true
  return 1
}
log "preparing sbtest ($TABLES x $TABLE_SIZE rows) on the baseline master and through the phxgo proxy"
prepare baseline "$BASE_ADDR" || die "prepare on the baseline failed"
wait_caught_up "$BASE_ADDR" "${BASE_REPLICAS[@]}"
PREPARE_TRIES=0
until
  find_master
  sql "$PHX_PROXY_ADDR" 'CREATE DATABASE IF NOT EXISTS sbtest' && prepare phxgo "$PHX_PROXY_ADDR"
do
  PREPARE_TRIES=$((PREPARE_TRIES + 1))
  [ $PREPARE_TRIES -lt 3 ] || die "prepare through the phxgo proxy failed 3 times"
  sleep 2
done
find_master
wait_caught_up "$PHX_DIRECT" "${PHX_REPLICAS[@]}"

# --- runs ------------------------------------------------------------------------
SYSTEMS=(baseline phxgo-proxy phxgo-direct)
addr_of() {
  case $1 in
    baseline) echo "$BASE_ADDR" ;;
    phxgo-proxy) echo "$PHX_PROXY_ADDR" ;;
    phxgo-direct) echo "$PHX_DIRECT" ;;
  esac
}

# run_one SYSTEM TEST THREADS: one sysbench run, appends to results and cpu.
# A run that fails (a phxgo failover mid-run) is retried once on the new
# master; RUN_FAILURES counts them.
RUN_FAILURES=0
run_one() {
  local sys=$1 test=$2 thr=$3 a out before after line try
  for try in 1 2; do
    # Both systems first catch up: replicas still applying the previous
    # run would take CPU and disk from this one, whichever system it is.
    wait_caught_up "$BASE_ADDR" "${BASE_REPLICAS[@]}"
    find_master
    wait_caught_up "$PHX_DIRECT" "${PHX_REPLICAS[@]}"
    a=$(addr_of "$sys")
    phx_pids
    out=$WORK/run-$sys-$test-$thr-$(date +%s).txt
    before=$(cpu_snapshot)
    if sysbench "$test" "${SB_COMMON[@]}" --mysql-host="$(host "$a")" --mysql-port="$(port "$a")" \
      --threads="$thr" --time="$SECONDS_PER_RUN" --report-interval=0 --percentile=95 \
      run >"$out" 2>&1; then
      break
    fi
    RUN_FAILURES=$((RUN_FAILURES + 1))
    log "sysbench $test on $sys ($a) failed (try $try): $(grep -m1 FATAL "$out" | cut -c1-200)"
    [ "$try" -lt 2 ] || die "sysbench run failed twice; see $out (through the proxy, try BENCH_PS_MODE=disable)"
  done
  after=$(cpu_snapshot)
  line=$(awk -v s="$sys" -v t="$test" -v n="$thr" '
    /transactions:/ {tps=$3; gsub(/\(/,"",tps)}
    /queries:/ && !/performed/ {qps=$3; gsub(/\(/,"",qps)}
    /ignored errors:/ {e=$4; gsub(/\(/,"",e)}
    /avg:/ {avg=$2}
    /95th percentile:/ {p95=$3}
    END {printf "%s %s %d %s %s %s %s %s\n", s, t, n, tps, qps, avg, p95, (e==""?0:e)}' "$out")
  echo "$line" >>"$RESULTS"
  echo "$sys $test $thr $(echo "$line" | awk '{print $5}') $before $after" >>"$CPU"
  log "$line"
}

k=0
for ((r = 1; r <= ROUNDS; r++)); do
  for test in $TESTS; do
    for thr in $THREADS; do
      for j in 0 1 2; do
        run_one "${SYSTEMS[$(((k + j) % 3))]}" "$test" "$thr"
      done
      k=$((k + 1))
    done
  done
done

# --- report --------------------------------------------------------------------
echo
echo "phxgo failovers during the bench: $FAILOVERS; failed prepares through the proxy: $PREPARE_TRIES; failed runs (retried): $RUN_FAILURES"
echo "sysbench $SECONDS_PER_RUN s per run, $ROUNDS round(s), $TABLES x $TABLE_SIZE rows, db-ps-mode=$PS_MODE," \
  "proxy=$PROXY_CHOICE node's, $(nproc) cores"
echo
echo "CPU per 1000 queries (ms): base_m = baseline master mariadbd, base_r = its 2 replicas; phx_m = phxgo master mariadbd,"
echo "phx_my = all 3 phxgo mariadbd, bld_m = master binlogd, bld = all 3 binlogd, proxy = all 3 sqlproxy; busy = machine busy %;"
echo "flush = disk cache flushes ($DISK) per query, whoever issued them"
awk -v hz="$HZ" -v S="$SECONDS_PER_RUN" -v NCPU="$(nproc)" '
  # fields: sys test thr qps, 9 counters before ($5..$13), 9 after ($14..$22)
  {
    kq = $4 * S / 1000; if (kq <= 0) kq = 1
    for (i = 5; i <= 11; i++) v[i] = ($(i + 9) - $i) / hz * 1000 / kq
    printf "%-13s %-18s %3d  base_m %6.1f base_r %6.1f phx_m %6.1f phx_my %6.1f bld_m %6.1f bld %6.1f proxy %6.1f  busy %3.0f%%  flush %5.2f\n",
      $1, $2, $3, v[5], v[6], v[7], v[8], v[9], v[10], v[11], ($21 - $12) / hz / (S * NCPU) * 100, ($22 - $13) / (kq * 1000)
  }' "$CPU"
echo
bin/sqlbench report -results "$RESULTS"
