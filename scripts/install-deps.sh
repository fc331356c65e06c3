#!/usr/bin/env bash
# Installs the Debian packages phxgo needs (idempotent). Needs root.
set -euo pipefail
need=()
command -v mariadbd >/dev/null 2>&1 || need+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || need+=(mariadb-client)
command -v mariadb-binlog >/dev/null 2>&1 || need+=(mariadb-client)
command -v mariadb-backup >/dev/null 2>&1 || need+=(mariadb-backup) # binlogd reseed (physical copy of a replica)
command -v sysbench >/dev/null 2>&1 || need+=(sysbench)
command -v haproxy >/dev/null 2>&1 || need+=(haproxy) # make bench-sql: the proxy anchor in front of the baseline
command -v iptables >/dev/null 2>&1 || need+=(iptables)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
command -v openssl >/dev/null 2>&1 || need+=(openssl) # scripts/make-test-ca.sh (TLS tests)
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3) # jepsen/lazyfs (power nemesis); as root it mounts /dev/fuse itself
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The distro's mariadb service is not used: phxgo runs its own mariadbd
  # processes on their own ports and datadirs.
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# Stop the distro's own server if the package started it; it is not ours.
if command -v systemctl >/dev/null 2>&1; then systemctl stop mariadb 2>/dev/null || true; fi
