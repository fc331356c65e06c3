#!/usr/bin/env bash
# make bench-sql: phxgo against MariaDB semi-sync, measured the same way
# (issue 19's yardstick).
#
# Starts, on loopback only, and tears down at exit:
#   (a) the baseline: 3 plain MariaDB servers (cmd/sqlbench baseline-up, the
#       same my.cnf as a phxgo node): semi-sync on the master only
#       (AFTER_SYNC); the replicas are semi-sync slaves, durable
#       (sync_binlog=1, innodb_flush_log_at_trx_commit=1) unless
#       BENCH_RELAXED_REPLICAS=1; they apply with as many parallel
#       workers as a phxgo replica does by default, unless
#       BENCH_BASELINE_APPLY_THREADS;
#   (b) HAProxy (Debian's package, tcp mode) in front of the baseline master,
#       another in front of phxgo's master's MariaDB (the server the
#       master node's proxy reaches, by the same unix socket), and a third
#       reaching that MariaDB by TCP, as another node's proxy does: the
#       proxy anchors;
#   (c) a 3-node phxgo cluster with its proxies (bin/phxcluster up, TLS on).
# Runs, in rotating turns, at each of BENCH_THREADS:
#   oltp_insert   semisync-direct, semisync-haproxy, phxgo-proxy-master,
#                 phxgo-proxy-other (to the master's MariaDB by TCP, with
#                 a read window), phxgo-direct (reference)
#   oltp_insert at fixed offered loads (BENCH_RATE, at the first of
#                 BENCH_THREADS): semisync-direct, phxgo-proxy-master,
#                 phxgo-direct; latency at the same work per second,
#                 light (300 tps) and at 0.9x the lower of the two
#                 systems' sustained rates ("common": both carry it
#                 with their replicas current)
#   oltp_point_select (BENCH_POINT_THREADS): semisync-direct,
#                 semisync-haproxy, phxgo-haproxy, phxgo-proxy-master,
#                 phxgo-haproxy-tcp, phxgo-haproxy-tcp-tls (sysbench with TLS
#                 through it: the anchor for the next one), phxgo-proxy-other
# Every run is `sqlbench run`: counters, sysbench, then it waits until every
# replica applied the master's @@gtid_binlog_pos, counters again. So
# sustained tps, CPU per transaction (by process kind) and disk flushes
# include the replicas' catch-up. `sqlbench report` prints the tables and
# last the line
#   sustained_insert_ratio= p95_ratio= binlogd_us_per_txn= catchup_s= proxy_vs_haproxy= rejected_batches=
# (at the first of BENCH_THREADS; cmd/sqlbench/report.go says which runs
# each figure compares; proxy_vs_haproxy is the median over the rounds of
# each round's ratio, the proxy and HAProxy having run side by side;
# rejected_batches is binlogd's counter from the first run to the last,
# retried runs included).
#
# Knobs (environment):
#   BENCH_SECONDS        seconds per sysbench run (default 20; BENCH_QUICK=1: 5)
#   BENCH_THREADS        insert thread counts (default "16 64"; the first is the last line's)
#   BENCH_POINT_THREADS  point-select threads (default 16; empty: no point selects)
#   BENCH_ROUNDS         repetitions of the insert runs; the report takes each figure's median run (default 3:
#                        single runs swing here: the master's proxy ran 0.63x and 0.94x of phxgo-direct in two)
#   BENCH_POINT_ROUNDS   repetitions of the point-select runs (default 5, at least BENCH_ROUNDS): one
#                        20 s sample per proxy swung 2-4x under load; the proxies run in turns, and a
#                        line before the report gives the median over rounds of each round's ratio
#   BENCH_RATE           offered loads of the fixed-rate insert runs (default "300 common"; 0 or empty:
#                        none): each a rate in tps; "semi", the semi-sync master's sustained rate
#                        (replicas' catch-up counted) in round 1's closed loop at the first of
#                        BENCH_THREADS, rounded down to 50; or "common", 0.9x the lower of that and
#                        phxgo's through the master's proxy, rounded down to 50 (an offered load above
#                        a system's sustained rate measures its queue, not its commits: semi-sync's
#                        2,700 tps gave phxgo a p95 of 2.9 s in session 36); one run per label and rate
#                        in each round
#   BENCH_TABLES, BENCH_TABLE_SIZE   sysbench data (default 4 x 10000 rows)
#   BENCH_PS_MODE        sysbench --db-ps-mode (default auto)
#   BENCH_RELAXED_REPLICAS=1  baseline replicas with sync_binlog=0, innodb_flush_log_at_trx_commit=2
#   BENCH_BASELINE_APPLY_THREADS  the baseline replicas' parallel apply workers (default: phxgo's
#                        replica_apply_threads default, 4; 0: one SQL thread, the yardstick before session 36)
#   BENCH_PORT           base port (default 23000): baseline +1..+3, HAProxy +4..+6, phxgo +110..+136
#   BENCH_LEASE          phxgo lease (default 5s)
#   BENCH_INSECURE=1     phxgo without TLS
#   BENCH_DIR            work directory (default: a temp dir, removed at exit); BENCH_KEEP=1 keeps it
# Needs root, MariaDB, sysbench and haproxy (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH=/usr/local/go/bin:$PATH

[ "${BENCH_QUICK:-0}" = 1 ] && BENCH_SECONDS=${BENCH_SECONDS:-5}
SECS=${BENCH_SECONDS:-20}
THREADS=${BENCH_THREADS:-16 64}
POINT_THREADS=${BENCH_POINT_THREADS-16}
ROUNDS=${BENCH_ROUNDS:-3}
RATES=${BENCH_RATE-300 common}
POINT_ROUNDS=${BENCH_POINT_ROUNDS:-5}
[ "$POINT_ROUNDS" -ge "$ROUNDS" ] || POINT_ROUNDS=$ROUNDS
TABLES=${BENCH_TABLES:-4}
TABLE_SIZE=${BENCH_TABLE_SIZE:-10000}
PS_MODE=${BENCH_PS_MODE:-auto}
PORT=${BENCH_PORT:-23000}
LEASE=${BENCH_LEASE:-5s}
PHX_BASE=$((PORT + 100))
HA_PORT=$((PORT + 4))
HA2_PORT=$((PORT + 5))
HA3_PORT=$((PORT + 6))
ANCHOR=${THREADS%% *}

log() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }
for rate in $RATES; do
  [[ "$rate" =~ ^([0-9]+|semi|common)$ ]] || die "BENCH_RATE=$RATES: want transactions per second, \"semi\" or \"common\" (0: no fixed-rate runs)"
done
[ "$RATES" != 0 ] || RATES=

# --- tools and binaries ------------------------------------------------------
for t in sysbench haproxy mariadb mariadbd; do
  command -v "$t" >/dev/null || die "$t is not installed: run scripts/install-deps.sh (root), or apt-get install the package"
done
mkdir -p bin
# Another helper's work in progress may not build: then the binaries
# already in bin/ are used (make build refreshes them).
for c in binlogd sqlproxy phxcluster sqlbench; do
  go build -o bin/ "./cmd/$c" 2>"/tmp/bench-build-$$.txt" || {
    [ -x "bin/$c" ] || { cat "/tmp/bench-build-$$.txt" >&2; die "cannot build cmd/$c"; }
    log "WARNING: cmd/$c does not build now; using the existing bin/$c"
  }
done
rm -f "/tmp/bench-build-$$.txt"

for p in $((PORT + 1)) $((PORT + 2)) $((PORT + 3)) "$HA_PORT" "$HA2_PORT" "$HA3_PORT" $((PHX_BASE + 10)) $((PHX_BASE + 20)) $((PHX_BASE + 30)); do
  [ -z "$(ss -Hltn "sport = :$p")" ] || die "port $p is in use; set BENCH_PORT"
done

if [ -n "${BENCH_DIR:-}" ]; then mkdir -p "$BENCH_DIR" && WORK=$BENCH_DIR; else WORK=$(mktemp -d "${TMPDIR:-/tmp}/phxgo-bench.XXXXXX"); fi
WORK=$(cd "$WORK" && pwd)
BASE_DIR=$WORK/baseline
PHX_DIR=$WORK/phxgo
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
HA_PID= HA2_PID= HA3_PID=

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  log "cleaning up"
  if [ -n "$HA_PID" ]; then kill "$HA_PID" 2>/dev/null || true; fi
  if [ -n "$HA2_PID" ]; then kill "$HA2_PID" 2>/dev/null || true; fi
  if [ -n "$HA3_PID" ]; then kill "$HA3_PID" 2>/dev/null || true; fi
  if [ -d "$PHX_DIR" ]; then
    bin/phxcluster down -dir "$PHX_DIR" -base-port "$PHX_BASE" >/dev/null 2>&1 || log "phxcluster down failed"
  fi
  if [ -d "$BASE_DIR" ]; then bin/sqlbench baseline-down -dir "$BASE_DIR" || log "baseline-down failed"; fi
  if [ "${BENCH_KEEP:-0}" = 1 ] || [ -n "${BENCH_DIR:-}" ]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- start the systems ----------------------------------------------------------
log "starting phxgo (3 nodes, lease $LEASE) in $PHX_DIR"
PHX_FLAGS=() CLI_TLS=(-tls-dir "$PHX_DIR/tls")
[ "${BENCH_INSECURE:-0}" = 1 ] && PHX_FLAGS=(-insecure) CLI_TLS=(-insecure)
bin/phxcluster up -dir "$PHX_DIR" -base-port "$PHX_BASE" -bin bin -lease "$LEASE" "${PHX_FLAGS[@]}" >"$WORK/phxcluster-up.txt" 2>&1 ||
  { cat "$WORK/phxcluster-up.txt" >&2; die "phxcluster up failed"; }

json_field() { grep -o "\"$2\": *\"[^\"]*\"" "$1" | sed 's/.*: *"\(.*\)"/\1/'; } # every value of "KEY" in FILE
# The app account's password is phxgo's generated one; the baseline gets
# the same, so both systems log in alike.
APP_PASS=$(json_field "$PHX_DIR/cluster.json" app_password)
export SQLBENCH_PASSWORD=$APP_PASS
mapfile -t PHX_MYSQL < <(json_field "$PHX_DIR/cluster.json" mysql_addr)
mapfile -t PHX_BINLOGD < <(json_field "$PHX_DIR/cluster.json" binlogd_addr)
mapfile -t PHX_PROXY < <(json_field "$PHX_DIR/cluster.json" proxy_addr)
mapfile -t PHX_HTTP < <(json_field "$PHX_DIR/cluster.json" http_addr)
[ ${#PHX_MYSQL[@]} -eq 3 ] || die "cluster.json: want 3 nodes, got ${#PHX_MYSQL[@]}"
PHX_METRICS=$(printf 'http://%s/metrics,' "${PHX_HTTP[@]}")

RELAXED=()
[ "${BENCH_RELAXED_REPLICAS:-0}" = 1 ] && RELAXED=(-relaxed-replicas)
APPLY=() # unset: sqlbench's default, phxgo's replica_apply_threads default
[ -z "${BENCH_BASELINE_APPLY_THREADS:-}" ] || APPLY=(-apply-threads "$BENCH_BASELINE_APPLY_THREADS")
log "starting the baseline (semi-sync master, 2 replicas${RELAXED:+, relaxed}) in $BASE_DIR"
BASE_ADDR=$(bin/sqlbench baseline-up -dir "$BASE_DIR" -base-port "$PORT" -app-password "$APP_PASS" "${APPLY[@]}" "${RELAXED[@]}")
# What the replicas run with, read back from their my.cnf (no line: one SQL thread).
BASE_APPLY=$(sed -n 's/^slave_parallel_threads=//p' "$BASE_DIR/node2/my.cnf")
BASE_APPLY=${BASE_APPLY:-0}
BASE_REPLICAS=127.0.0.1:$((PORT + 2)),127.0.0.1:$((PORT + 3))
BASE_PIDS=$(cat "$BASE_DIR"/node{1,2,3}/mysqld.pid | paste -sd,)

log "starting HAProxy (tcp mode) on 127.0.0.1:$HA_PORT in front of $BASE_ADDR"
# nbthread: as many threads as CPUs, which is also the GOMAXPROCS every
# sqlproxy runs with (Go's default; phxcluster passes no -procs): both
# relays may use every core, and neither stalls all its sessions when
# its one thread is preempted on a shared host.
cat >"$WORK/haproxy.cfg" <<EOF
global
  maxconn 4096
  nbthread $(nproc)
defaults
  mode tcp
  timeout connect 5s
  timeout client 1h
  timeout server 1h
listen mariadb
  bind 127.0.0.1:$HA_PORT
  server master $BASE_ADDR
EOF
# start_haproxy PIDVAR CFG LOG PORT: HAProxy with CFG, listening on
# 127.0.0.1:PORT; its pid goes into the variable PIDVAR at once (so the
# cleanup trap stops it even if it never listens). In a session of its
# own, as phxgo's daemons are (phxcluster starts each with setsid): with
# the kernel's autogroup scheduling a session is one scheduling group,
# and a relay sharing sysbench's group ran its point selects about 3x
# faster under load than the same binary in its own (sqlproxy measured
# both ways side by side). No job control here, so setsid execs in place
# and $! is HAProxy's pid.
start_haproxy() {
  setsid haproxy -db -f "$2" >"$3" 2>&1 &
  printf -v "$1" %s "$!"
  for _ in $(seq 100); do
    [ -z "$(ss -Hltn "sport = :$4")" ] || return 0
    kill -0 "${!1}" 2>/dev/null || { cat "$3" >&2; die "haproxy ($2) exited"; }
    sleep 0.1
  done
  die "haproxy ($2) does not listen on 127.0.0.1:$4"
}
start_haproxy HA_PID "$WORK/haproxy.cfg" "$WORK/haproxy.log" "$HA_PORT"
HA_ADDR=127.0.0.1:$HA_PORT

# find_master: MASTER (0-based), PHX_DIRECT, PHX_REPLICAS_CSV, PHX_PIDS
# from the nodes' own status; a change of master is counted.
FAILOVERS=0 MASTER=-1
find_master() {
  local i st old=$MASTER deadline=$((SECONDS + 300)) reps=()
  MASTER=-1
  while [ "$MASTER" -lt 0 ]; do
    for i in 0 1 2; do
      st=$(bin/binlogd status -addr "${PHX_BINLOGD[$i]}" "${CLI_TLS[@]}" 2>/dev/null || true)
      if grep -qE '^role +master$' <<<"$st"; then MASTER=$i; fi
    done
    if [ "$MASTER" -lt 0 ]; then
      [ $SECONDS -lt $deadline ] || die "no phxgo node says role master for 300 s (logs in $PHX_DIR/node*/binlogd.log)"
      sleep 0.5
    fi
  done
  PHX_DIRECT=${PHX_MYSQL[$MASTER]}
  for i in 0 1 2; do [ "$i" -eq "$MASTER" ] || reps+=("${PHX_MYSQL[$i]}"); done
  PHX_REPLICAS_CSV=$(IFS=,; echo "${reps[*]}")
  PHX_PIDS=()
  local kind file
  for kind in mariadbd binlogd sqlproxy; do
    case $kind in mariadbd) file=mysql/mysqld.pid ;; *) file=$kind.pid ;; esac
    PHX_PIDS+=(-pids "$kind=$(cat "$PHX_DIR"/node{1,2,3}/"$file" 2>/dev/null | paste -sd,)")
  done
  if [ "$old" -ge 0 ] && [ "$old" -ne "$MASTER" ]; then
    FAILOVERS=$((FAILOVERS + 1))
    log "phxgo FAILOVER: master is now node $((MASTER + 1)) (was node $((old + 1)))"
  fi
}
find_master
log "phxgo master: node $((MASTER + 1)) ($PHX_DIRECT)"

# The fair anchor for the proxy: HAProxy in front of the very MariaDB the
# master node's proxy uses (the baseline master is another server, with
# other load on it), reached the same way: by its unix socket, as
# phxcluster starts every proxy with -mysql-socket (MariaDB spends less
# per query on a socket client than on a TCP one). Fixed at the master
# found now: after a failover it fronts a replica, which still answers
# point selects.
PHX_SOCK=$PHX_DIR/node$((MASTER + 1))/mysql/mysqld.sock
[ -S "$PHX_SOCK" ] || PHX_SOCK=$PHX_DIRECT # no socket: TCP, like a proxy without -mysql-socket
log "starting HAProxy (tcp mode) on 127.0.0.1:$HA2_PORT in front of phxgo's master $PHX_DIRECT ($PHX_SOCK)"
sed -e "s/127.0.0.1:$HA_PORT/127.0.0.1:$HA2_PORT/" -e "s|server master .*|server master $PHX_SOCK|" \
  "$WORK/haproxy.cfg" >"$WORK/haproxy-phxgo.cfg"
start_haproxy HA2_PID "$WORK/haproxy-phxgo.cfg" "$WORK/haproxy-phxgo.log" "$HA2_PORT"
HA2_ADDR=127.0.0.1:$HA2_PORT
# And the anchor for another node's proxy: it reaches the master's
# MariaDB by TCP (from another host it could not do otherwise), so
# HAProxy does too here.
log "starting HAProxy (tcp mode) on 127.0.0.1:$HA3_PORT in front of phxgo's master $PHX_DIRECT (by TCP)"
sed -e "s/127.0.0.1:$HA_PORT/127.0.0.1:$HA3_PORT/" -e "s|server master .*|server master $PHX_DIRECT|" \
  "$WORK/haproxy.cfg" >"$WORK/haproxy-phxgo-tcp.cfg"
start_haproxy HA3_PID "$WORK/haproxy-phxgo-tcp.cfg" "$WORK/haproxy-phxgo-tcp.log" "$HA3_PORT"
HA3_ADDR=127.0.0.1:$HA3_PORT
# Another node's proxy speaks TLS to the master's MariaDB, as it must
# between hosts; HAProxy cannot (MySQL starts TLS inside its protocol),
# so a secured HAProxy deployment passes the client's TLS through to
# MariaDB. phxgo-haproxy-tcp-tls is that path: sysbench with TLS through
# the TCP HAProxy, the same crypto on the same MariaDB as the proxy's
# link (sysbench 1.0 reads its TLS files from its working directory).
SB_TLS_DIR=
if [ "${BENCH_INSECURE:-0}" != 1 ]; then
  SB_TLS_DIR=$WORK/sysbench-tls
  mkdir -p "$SB_TLS_DIR"
  cp "$PHX_DIR/tls/ca.crt" "$SB_TLS_DIR/cacert.pem"
  cp "$PHX_DIR/tls/admin.crt" "$SB_TLS_DIR/client-cert.pem"
  cp "$PHX_DIR/tls/admin.key" "$SB_TLS_DIR/client-key.pem"
fi

catch_up() { # both systems, so no run pays for the other's (or its own previous) lag
  bin/sqlbench waitapplied -master "$BASE_ADDR" -replicas "$BASE_REPLICAS" >/dev/null
  find_master
  bin/sqlbench waitapplied -master "$PHX_DIRECT" -replicas "$PHX_REPLICAS_CSV" >/dev/null
}

# --- data -------------------------------------------------------------------------
SB_OPTS=(--db-driver=mysql --mysql-db=sbtest --tables="$TABLES" --table-size="$TABLE_SIZE" --db-ps-mode="$PS_MODE")
prepare() { # prepare NAME ADDR
  local out=$WORK/prepare-$1.txt
  sysbench oltp_common "${SB_OPTS[@]}" --mysql-host="${2%:*}" --mysql-port="${2##*:}" --mysql-user=app \
    --mysql-password="$APP_PASS" --threads=1 prepare >"$out" 2>&1 && return 0
  log "sysbench prepare on $1 ($2) failed: $(grep -m1 FATAL "$out" | cut -c1-200)"
  sysbench oltp_common "${SB_OPTS[@]}" --mysql-host="${2%:*}" --mysql-port="${2##*:}" --mysql-user=app \
    --mysql-password="$APP_PASS" cleanup >/dev/null 2>&1 || true
  return 1
}
log "preparing sbtest ($TABLES x $TABLE_SIZE rows) on the baseline master and through phxgo's master node's proxy"
prepare baseline "$BASE_ADDR" || die "prepare on the baseline failed"
PREPARE_TRIES=0
until
  find_master
  mariadb -h"${PHX_PROXY[$MASTER]%:*}" -P"${PHX_PROXY[$MASTER]##*:}" -uapp -p"$APP_PASS" -e 'CREATE DATABASE IF NOT EXISTS sbtest' &&
    prepare phxgo "${PHX_PROXY[$MASTER]}"
do
  PREPARE_TRIES=$((PREPARE_TRIES + 1))
  [ $PREPARE_TRIES -lt 3 ] || die "prepare through the phxgo proxy failed 3 times"
  sleep 2
done

# --- runs ---------------------------------------------------------------------------
# run_one LABEL TEST THREADS [RATE]; a failed run (a phxgo failover) is
# retried once. RATE: sysbench --rate (a fixed offered load).
RUN_FAILURES=0
run_one() {
  local label=$1 test=$2 thr=$3 rate=${4:-0} try args
  for try in 1 2; do
    catch_up
    case $label in
      semisync-direct) args=(-target "$BASE_ADDR") ;;
      semisync-haproxy) args=(-target "$HA_ADDR" -pids "haproxy=$HA_PID") ;;
      phxgo-haproxy) args=(-target "$HA2_ADDR" -pids "haproxy=$HA2_PID") ;;
      phxgo-haproxy-tcp | phxgo-haproxy-tcp-tls) args=(-target "$HA3_ADDR" -pids "haproxy=$HA3_PID") ;;
      phxgo-proxy-master) args=(-target "${PHX_PROXY[$MASTER]}") ;;
      phxgo-proxy-other) args=(-target "${PHX_PROXY[$(((MASTER + 1) % 3))]}") ;;
      phxgo-direct) args=(-target "$PHX_DIRECT") ;;
    esac
    case $label in
      semisync-*) args+=(-master "$BASE_ADDR" -replicas "$BASE_REPLICAS" -pids "mariadbd=$BASE_PIDS") ;;
      phxgo-*) args+=(-master "$PHX_DIRECT" -replicas "$PHX_REPLICAS_CSV" -metrics "$PHX_METRICS" "${PHX_PIDS[@]}") ;;
    esac
    local dir=. sb=("${SB_OPTS[@]}")
    [ "$label" != phxgo-haproxy-tcp-tls ] || dir=$SB_TLS_DIR sb+=(--mysql-ssl=on)
    if (cd "$dir" && "$ROOT/bin/sqlbench" run -label "$label" -test "$test" -threads "$thr" -rate "$rate" -seconds "$SECS" "${args[@]}" \
      -out "$RESULTS" -log "$WORK/run-$label-$test-$thr-$rate-$try.txt" -- "${sb[@]}") >&2; then
      return 0
    fi
    RUN_FAILURES=$((RUN_FAILURES + 1))
    log "run $label $test $thr failed (try $try)"
  done
  die "run $label $test $thr failed twice (sysbench output in $WORK/run-$label-$test-$thr-$rate-*.txt)"
}

# binlogd's rejected-batch counter around all runs: a failed (retried)
# run writes no record, but its rejections count.
rejected_now() { bin/sqlbench rejected -metrics "$PHX_METRICS" 2>/dev/null || echo NaN; }
REJ0=$(rejected_now)

INSERT_LABELS=(semisync-direct semisync-haproxy phxgo-proxy-master phxgo-proxy-other phxgo-direct)
# The proxies next to their HAProxy anchor, so each round's ratio
# compares runs back to back.
POINT_LABELS=(phxgo-proxy-master phxgo-haproxy phxgo-proxy-other phxgo-haproxy-tcp-tls phxgo-haproxy-tcp semisync-direct semisync-haproxy)
[ -n "$SB_TLS_DIR" ] || POINT_LABELS=(phxgo-proxy-master phxgo-haproxy phxgo-proxy-other phxgo-haproxy-tcp semisync-direct semisync-haproxy)
RATE_LABELS=(semisync-direct phxgo-proxy-master phxgo-direct)
# run_round TEST THREADS RATE LABEL...: one run of TEST per label, starting
# one label later at each call (k), so no system always runs first.
k=0
run_round() {
  local test=$1 thr=$2 rate=$3 j
  shift 3
  for ((j = 0; j < $#; j++)); do
    run_one "${@:$(((k + j) % $# + 1)):1}" "$test" "$thr" "$rate"
  done
  k=$((k + 1))
}
for ((r = 1; r <= ROUNDS; r++)); do
  for thr in $THREADS; do
    log "oltp_insert, $thr threads, $SECS s per run (round $r/$ROUNDS)"
    run_round oltp_insert "$thr" 0 "${INSERT_LABELS[@]}"
  done
  for rate in $RATES; do
    if [ "$rate" = semi ]; then
      # Fixed once, from round 1, so every round's runs pair up.
      [ -n "${SEMI_RATE:-}" ] || SEMI_RATE=$(bin/sqlbench sustained -results "$RESULTS" -label semisync-direct -threads "$ANCHOR") ||
        die "no sustained rate of semisync-direct at $ANCHOR threads to offer"
      rate=$SEMI_RATE
      log "oltp_insert at $rate tps offered (semi-sync's sustained rate), $ANCHOR threads, $SECS s per run (round $r/$ROUNDS)"
    elif [ "$rate" = common ]; then
      if [ -z "${COMMON_RATE:-}" ]; then
        COMMON_SEMI=$(bin/sqlbench sustained -results "$RESULTS" -label semisync-direct -threads "$ANCHOR" -step 1) ||
          die "no sustained rate of semisync-direct at $ANCHOR threads to offer"
        COMMON_PHX=$(bin/sqlbench sustained -results "$RESULTS" -label phxgo-proxy-master -threads "$ANCHOR" -step 1) ||
          die "no sustained rate of phxgo-proxy-master at $ANCHOR threads to offer"
        COMMON_RATE=$(((COMMON_SEMI < COMMON_PHX ? COMMON_SEMI : COMMON_PHX) * 9 / 10 / 50 * 50))
        [ "$COMMON_RATE" -ge 50 ] || COMMON_RATE=50
      fi
      rate=$COMMON_RATE
      log "oltp_insert at $rate tps offered (0.9x the lower sustained rate: semi-sync $COMMON_SEMI, phxgo $COMMON_PHX), $ANCHOR threads, $SECS s per run (round $r/$ROUNDS)"
    else
      [ "$rate" -gt 0 ] || continue
      log "oltp_insert at $rate tps offered, $ANCHOR threads, $SECS s per run (round $r/$ROUNDS)"
    fi
    run_round oltp_insert "$ANCHOR" "$rate" "${RATE_LABELS[@]}"
  done
done
for ((r = 1; r <= POINT_ROUNDS; r++)); do
  for thr in $POINT_THREADS; do
    log "oltp_point_select, $thr threads (round $r/$POINT_ROUNDS)"
    run_round oltp_point_select "$thr" 0 "${POINT_LABELS[@]}"
  done
done

# --- rejected batches, report -------------------------------------------------------
# `binlogd log` reads a stopped node's wal: stop phxgo first. The report
# uses binlogd's rejected-batch metric when it exports one, else this count.
REJ1=$(rejected_now)
REJ=()
if [ "$REJ0" != NaN ] && [ "$REJ1" != NaN ] && [ "$REJ1" -ge "$REJ0" ]; then
  REJ=(-rejected-metric-delta $((REJ1 - REJ0)))
fi
kill "$HA_PID" "$HA2_PID" "$HA3_PID" 2>/dev/null || true
HA_PID= HA2_PID= HA3_PID=
log "stopping phxgo to read its log (binlogd log -rejected)"
bin/phxcluster down -dir "$PHX_DIR" -base-port "$PHX_BASE" >/dev/null 2>&1 || log "phxcluster down failed"
if bin/binlogd log -rejected -config "$PHX_DIR/node$((MASTER + 1))/binlogd.json" >"$WORK/rejected.txt" 2>"$WORK/rejected.err"; then
  REJ+=(-rejected-log "$WORK/rejected.txt")
else
  log "binlogd log -rejected failed: $(head -c 300 "$WORK/rejected.err")"
fi
# The work directory goes at exit: show why any batch was rejected (the
# log's verdicts, and what the nodes logged around them) while it exists.
# Only batches count (a lease request that lost a race at start-up is
# rejected by design, as the report's count knows).
if grep -q -- ' binlog_batch .*-> REJECTED' "$WORK/rejected.txt" 2>/dev/null; then
  log "rejected batches in the log (binlogd log -rejected):"
  grep -- ' binlog_batch .*-> REJECTED' "$WORK/rejected.txt" | head -20 >&2
  for n in 1 2 3; do
    grep -hE 'batch rejected|proposed again|Paxos leadership|"kind":"became_' "$PHX_DIR/node$n/binlogd.log" 2>/dev/null |
      tail -20 | sed "s/^/node$n: /" >&2 || true
  done
fi

echo
echo "phxgo failovers: $FAILOVERS; failed prepares through the proxy: $PREPARE_TRIES; failed runs (retried): $RUN_FAILURES"
echo "sysbench $SECS s per run, $ROUNDS round(s), $TABLES x $TABLE_SIZE rows, db-ps-mode=$PS_MODE, baseline replicas" \
  "$([ ${#RELAXED[@]} -gt 0 ] && echo relaxed || echo durable) with $BASE_APPLY apply workers, $(nproc) cores"
# point_ratios THREADS: each round's qps of phxgo's proxies over HAProxy in
# front of the same MariaDB, reached the same way (the master node's proxy
# by the unix socket, another node's by TCP), and the median of those
# ratios (a label's i-th record is round i: a failed run writes none, its
# retry one).
point_ratios() {
  jq -rs --argjson t "$1" '
    def qps: if .run_s > 0 then .queries / .run_s else 0 end;
    def med: sort | if length == 0 then null elif length % 2 == 1 then .[(length - 1) / 2] else (.[length / 2 - 1] * .[length / 2] | sqrt) end;
    def f: if . == null then "NaN" else . * 1000 | round / 1000 | tostring end;
    [.[] | select(.test == "oltp_point_select" and .threads == $t)] as $r
    | [$r[] | select(.label == "phxgo-haproxy") | qps] as $h
    | [$r[] | select(.label == "phxgo-haproxy-tcp") | qps] as $htcp
    | [$r[] | select(.label == "phxgo-haproxy-tcp-tls") | qps] as $htls
    | def per($l; $h): [$r[] | select(.label == $l) | qps] as $p
        | [range(0; [$p, $h] | map(length) | min) | if $h[.] > 0 then $p[.] / $h[.] else 0 end];
      per("phxgo-proxy-master"; $h) as $m | per("phxgo-proxy-other"; $h) as $o | per("phxgo-proxy-other"; $htcp) as $ot | per("phxgo-proxy-other"; $htls) as $otls
    | "point selects, \($t) threads, \($m | length) rounds: median of the rounds ratios to HAProxy:"
      + " master_proxy=\($m | med | f) (socket HAProxy) other_proxy=\($ot | med | f) (TCP HAProxy; \($otls | med | f) against it with TLS end to end; \($o | med | f) against the socket one)"
      + " (per round: \($m | map(f) | join(" ")) / \($ot | map(f) | join(" ")))"
  ' "$RESULTS" 2>/dev/null || echo "point selects, $1 threads: no ratios (jq failed)"
}
for thr in $POINT_THREADS; do point_ratios "$thr"; done
echo
bin/sqlbench report -results "$RESULTS" -anchor-threads "$ANCHOR" "${REJ[@]}"
