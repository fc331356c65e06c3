#!/usr/bin/env bash
# Point-select cost of sqlproxy (issues 6 and 8): sysbench oltp_point_select
# against one real MariaDB, in turns: direct, through a trivial Go TCP relay
# (io.Copy both ways: the ceiling for any TCP relay in Go on this machine),
# through the linearizable proxy, and through the proxy reaching MariaDB by
# its unix socket (-mysql-socket). Prints each round's QPS and ratios, and
# last `relay_ratio= proxy_ratio= proxy_socket_ratio=` (to direct, means
# over rounds) and `proxy_vs_relay= proxy_socket_vs_relay=` (summed QPS).
# The machine is shared: compare ratios from one run, not absolute numbers.
#
# Knobs (environment):
#   BENCH_SECONDS  seconds per sysbench run (default 10)
#   BENCH_ROUNDS   rounds of direct/relay/proxy (default 2)
#   BENCH_THREADS  sysbench threads (default 8)
#   BENCH_PROCS    GOMAXPROCS of the relay and proxy, comma-separated (default 0: Go's, one per CPU, as cmd/sqlproxy)
#   BENCH_PROFILE  directory for the proxy's CPU and allocation profiles (first round)
# Needs mariadbd and sysbench (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
command -v sysbench >/dev/null || { echo "bench-proxy: sysbench not installed (scripts/install-deps.sh)" >&2; exit 1; }
args=(-throughput -throughput.gosql=false
	-throughput.time="${BENCH_SECONDS:-10}s" -throughput.rounds="${BENCH_ROUNDS:-2}"
	-throughput.threads="${BENCH_THREADS:-8}" -throughput.procs="${BENCH_PROCS:-0}")
if [ -n "${BENCH_PROFILE:-}" ]; then
	mkdir -p "$BENCH_PROFILE"
	args+=(-throughput.profile="$(cd "$BENCH_PROFILE" && pwd)")
fi
out=$(go test -v -count=1 -timeout 30m -run '^TestThroughput$' ./sqlproxy -args "${args[@]}" 2>&1) || {
	echo "$out" >&2
	exit 1
}
echo "$out" | grep '^THROUGHPUT' | sed 's/^THROUGHPUT //'
echo "$out" | grep '^THROUGHPUT sysbench' | awk '
	{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] += kv[2] } n++ }
	END { if (n) printf "relay_ratio=%.3f proxy_ratio=%.3f proxy_socket_ratio=%.3f proxy_vs_relay=%.3f proxy_socket_vs_relay=%.3f\n",
		v["relay_ratio"]/n, v["proxy_ratio"]/n, v["proxy_socket_ratio"]/n, v["proxy"]/v["relay"], v["proxy_socket"]/v["relay"] }'
