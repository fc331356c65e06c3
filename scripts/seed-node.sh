#!/usr/bin/env bash
# seed-node.sh — add a new node to a running phxgo cluster.
#
#   scripts/seed-node.sh NEW.json SOURCE MEMBER_GRPC
#
#   NEW.json     the new node's binlogd config: "join": true, its own entry
#                and the current members in "members" (ids and addresses),
#                an EMPTY mysql_dir and dir.
#   SOURCE       a replica's MariaDB to copy: a unix socket path (read as
#                root), or host:port (then SEED_USER, default root, and
#                SEED_PASSWORD_FILE, mode 0600). Prefer a replica to the
#                master: the dump takes a brief FLUSH TABLES WITH READ LOCK.
#   MEMBER_GRPC  any member's binlogd gRPC address (host:port).
#   TLS_DIR      (environment) the directory with the operator's admin.crt,
#                admin.key and ca.crt (binlogd init's -out): members add
#                needs the admin certificate. INSECURE=1 instead for a
#                cluster running with "insecure_no_tls".
#
# Steps:
#   1. binlogd seed: create the new node's MariaDB, load
#      mariadb-dump --single-transaction --gtid --master-data=2 of the
#      replica's databases with sql_log_bin=0, set gtid_slave_pos to the
#      dump's position, stop it;
#   2. start binlogd on the new node (NO_START=1 skips this, e.g. when a
#      systemd unit starts it: do that between steps 1 and 3);
#   3. binlogd members add: the change goes through the log and is active
#      when the command returns; the new node then catches up from the log
#      (its MariaDB replicates from its own binlogd from the dump's GTID).
#
# Alternative to step 1 (big data sets): a cold copy. Stop a replica's
# binlogd (it stops its MariaDB safely; the cluster keeps a majority),
# copy its mysql_dir/data to the new node's mysql_dir/data (rsync), delete
# auto.cnf, master.info, relay-log.info and relay*.0* from the copy, start
# the replica again; then run this script with SOURCE=- to skip seeding.
# The copy's gtid_current_pos (from its binlog) is where it resumes.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 3 ]; then
  sed -n '2,20p' "$0" >&2
  exit 2
fi
cfg=$1 src=$2 member=$3
BIN=${BIN:-bin}
binlogd="$BIN/binlogd"
# Checked before seeding: members add at the end needs the admin certificate.
if [ "${INSECURE:-0}" = 1 ]; then creds=(-insecure); else
  creds=(-tls-dir "${TLS_DIR:?set TLS_DIR to the directory with admin.crt (or INSECURE=1)}"); fi
[ -x "$binlogd" ] || { echo "seed-node: $binlogd not found (make build, or set BIN)" >&2; exit 1; }

case "$src" in
  -) echo "seed-node: SOURCE=-: MariaDB seeded already (cold copy)";;
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
