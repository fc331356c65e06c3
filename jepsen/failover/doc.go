// Package failover measures a master failover under an insert load, in
// parts, the way issue 20.5 asks:
//
//	kill ──► detected ──► elected ──► applied ──► promoted ──► first write
//	 │        │            │           │           │             │
//	 │        │            │           │           │             └ a proxy acknowledged an
//	 │        │            │           │           │               INSERT invoked after the kill
//	 │        │            │           │           └ the new master reports role MASTER
//	 │        │            │           │             (MariaDB durable and writable; its
//	 │        │            │           │             "serving writes as master" log line,
//	 │        │            │           │             capture started, is printed too)
//	 │        │            │           └ its MariaDB applied everything valid in the
//	 │        │            │             log (mysql_gtid_pos = last_valid_gtid)
//	 │        │            └ a survivor reports a master in a later epoch
//	 │        └ a survivor's view of the lease ran out (lease_remaining 0,
//	 │          no master, or campaigning)
//	 └ SIGKILL of the master's sqlproxy, binlogd and mariadbd at once
//
// Threads clients insert one row per statement through the proxies (each
// starts on its own node and moves to the next one after an error, with an
// INSERT timeout of 2 s). The binlogds of the surviving nodes are polled
// over their Admin Status RPC (mutual TLS, the admin certificate) every
// 50 ms; a moment is stamped with the poll that first saw it, so it is
// late by at most one poll plus the RPC. The first write is stamped by
// the client that got the answer; when it lands between two polls the
// promotion it needed is stamped with it.
//
// The target is the whole failover within two leases: detection is at
// most one lease (the survivors' view of the lease the master last
// renewed), so election, catch-up and the first write must fit in the
// second.
//
// TestFailoverShort does one failover with 16 threads and checks that
// every part is measured and ordered (no timed assertions); `make
// failover-bench` (`jepsen failover`) does rounds with 64 threads and
// prints each part against the lease.
package failover
