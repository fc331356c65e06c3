#!/usr/bin/env bash
# seed-node.sh — add a new node to a running phxgo cluster.
#
#   scripts/seed-node.sh NEW.json SOURCE MEMBER_GRPC
#
#   NEW.json     the new node's binlogd config: "join": true, its own entry
#                and the current members in "members" (ids and addresses),
#                an EMPTY mysql_dir and dir.
#   SOURCE       where the new node's MariaDB data comes from:
#                  auto         binlogd reseed: a physical copy (mariadb-backup
#                               streamed over gRPC) of the most caught-up
#                               replica among NEW.json's members (recommended)
#                  N            binlogd reseed from node N (a replica)
#                  grpc://H:P   binlogd reseed from the binlogd at H:P
#                  /path.sock   binlogd seed: a logical dump of the replica
#                               whose MariaDB socket this is (same host)
#                  host:port    binlogd seed over TCP (SEED_USER, default
#                               root, and SEED_PASSWORD_FILE, mode 0600)
#                  -            seeded already
#                Prefer a replica to the master: reseed refuses the master
#                (RESEED_FORCE=1 overrides), the dump takes a brief lock.
#                reseed needs the mariadb-backup package on both hosts and
#                the node's own certificate (tls_* in NEW.json).
#   MEMBER_GRPC  any member's binlogd gRPC address (host:port).
#   TLS_DIR      (environment) the directory with the operator's admin.crt,
#                admin.key and ca.crt (binlogd init's -out): members add
#                needs the admin certificate. INSECURE=1 instead for a
#                cluster running with "insecure_no_tls".
#
# Steps:
#   1. copy a replica's data. reseed (binlogd/reseed): the source replica's
#      binlogd streams `mariadb-backup --backup --stream=xbstream` to this
#      host, which extracts and prepares it with progress (bytes, MiB/s,
#      ETA) and sets gtid_slave_pos to the copy's GTID. seed: loads
#      mariadb-dump --single-transaction --gtid --master-data=2 of the
#      replica's databases with sql_log_bin=0, sets gtid_slave_pos to the
#      dump's position. A physical copy is several times faster at real
#      sizes (README "Adding a node");
#   2. start binlogd on the new node (NO_START=1 skips this, e.g. when a
#      systemd unit starts it: do that between steps 1 and 3);
#   3. binlogd members add: the change goes through the log and is active
#      when the command returns; the new node then catches up from the log
#      (its MariaDB replicates from its own binlogd from the copy's GTID).
#
# A broken member (UNSAFE, RESEED) is reseeded the same way without this
# script: stop its binlogd, `binlogd reseed -config NODE.json`, start it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 3 ]; then
  sed -n '2,32p' "$0" >&2
  exit 2
fi
cfg=$1 src=$2 member=$3
BIN=${BIN:-bin}
binlogd="$BIN/binlogd"
# Checked before seeding: members add at the end needs the admin certificate.
if [ "${INSECURE:-0}" = 1 ]; then creds=(-insecure); else
  creds=(-tls-dir "${TLS_DIR:?set TLS_DIR to the directory with admin.crt (or INSECURE=1)}"); fi
[ -x "$binlogd" ] || { echo "seed-node: $binlogd not found (make build, or set BIN)" >&2; exit 1; }

force=(); [ "${RESEED_FORCE:-0}" = 1 ] && force=(-force)
case "$src" in
  -) echo "seed-node: SOURCE=-: MariaDB seeded already";;
  auto) "$binlogd" reseed -config "$cfg" "${force[@]}";;
  grpc://*) "$binlogd" reseed -config "$cfg" -from "${src#grpc://}" "${force[@]}";;
  [0-9]|[0-9][0-9]|[0-9][0-9][0-9]) "$binlogd" reseed -config "$cfg" -source-node "$src" "${force[@]}";;
  /*) "$binlogd" seed -config "$cfg" -from-socket "$src";;
  *)  "$binlogd" seed -config "$cfg" -from "$src" -from-user "${SEED_USER:-root}" \
        ${SEED_PASSWORD_FILE:+-from-password-file "$SEED_PASSWORD_FILE"};;
esac

if [ "${NO_START:-0}" != 1 ]; then
  log="$(dirname "$cfg")/binlogd.log"
  nohup setsid "$binlogd" run -config "$cfg" >>"$log" 2>&1 &
  echo "seed-node: binlogd started (pid $!, log $log)"
fi

"$binlogd" members add -addr "$member" -config "$cfg" "${creds[@]}"
echo "seed-node: added; follow the catch-up with: $binlogd status -addr <its grpc_addr>"
