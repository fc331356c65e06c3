#!/usr/bin/env bash
# Starts or stops the local 3-node cluster under .cluster/ (make cluster / make cluster-down).
# Needs root on Debian 12: installs MariaDB if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
cmd=${1:-up}
BASE_PORT=${BASE_PORT:-17000}
NODES=${NODES:-3}
case "$cmd" in
  up)
    scripts/install-deps.sh
    mkdir -p bin
    go build -o bin/ ./cmd/binlogd ./cmd/sqlproxy ./cmd/phxcluster
    exec bin/phxcluster up -dir .cluster -nodes "$NODES" -witnesses "${WITNESSES:-0}" -learners "${LEARNERS:-0}" -base-port "$BASE_PORT" -bin bin
    ;;
  down)
    if [ ! -x bin/phxcluster ]; then go build -o bin/ ./cmd/phxcluster; fi
    exec bin/phxcluster down -dir .cluster -base-port "$BASE_PORT"
    ;;
  status)
    exec bin/phxcluster status -dir .cluster -base-port "$BASE_PORT"
    ;;
  *)
    echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
