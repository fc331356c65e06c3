// Package hosts proves that phxgo runs on separate machines, set up only
// the documented way (`make hosts-test`). Each host is a
// network namespace with its own loopback and its own address on a bridge
// that only the run's namespaces share (no route out; jepsen/netns):
//
//	ns app 10.231.18.200 ─┐   (the application and the operator)
//	ns h1  10.231.18.1  ──┤
//	ns h2  10.231.18.2  ──┼── bridge (ns br)
//	ns h3  10.231.18.3  ──┤
//	ns h4  10.231.18.4  ──┘   (added later)
//
// Files: each host has an /etc/phxgo/node<id> and a /var/lib/phxgo/node<id>
// stand-in under the run's directory, and the binaries in a
// /usr/local/bin stand-in; units run from scripts/systemd/ as written
// (jepsen/sdunit: ExecStartPre, ExecStart, Type=notify, KillMode, as
// User=mysql, inside the host's namespace through nsenter).
//
// The scenario:
//
//  1. `binlogd init -hosts H1,H2,H3` on the operator's host; each node's
//     directory copied to its host; binlogd units started on the three at
//     once, then the sqlproxy units; `binlogd cluster status` healthy.
//  2. The app inserts rows through the proxy of a host that is not the
//     master; a row is acknowledged when its INSERT returned OK.
//  3. The master's host is cut off (its bridge port down). A new master
//     serves the app: failover_s is the app's gap, last ack before the
//     cut to first ack after. The host is reconnected; healthy again.
//  4. Host 4 is added with README's add-node steps (addnode.go): `init
//     -add`, copy, `binlogd reseed` from a replica on another host (on
//     host 4, as the units' user), unit start, scripts/seed-node.sh
//     (members add), sqlproxy unit.
//  5. A replica is removed (`binlogd members remove`) and its units stopped.
//  6. Rolling restart: each host's units stopped and started in turn
//     (systemd's stop: KillMode=mixed), the cluster healthy after each.
//  7. Every acknowledged row is on every node's MariaDB.
//
// Throughout, every `cluster status` is checked for members UNSAFE or
// needing a reseed. Traffic goes only between the run's namespaces: the
// test process dials only from the app's namespace (netns DialContext),
// and the operator's commands run there (ip netns exec).
//
// Cleanup: namespaces are deleted at the end (their processes killed);
// namespaces of a dead earlier run (NSPrefix<pid>-*) at the start.
package hosts
