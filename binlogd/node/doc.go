// Package node is binlogd: one node's daemon, wiring the Paxos log, the
// master lease, the node's MariaDB, binlog capture and the replication
// endpoint.
//
//	              gRPC peers ◀──▶ paxos.Node ──Apply──▶ masterlease.Lease
//	                                  ▲   │ Read                │ Watch (role)
//	capture ──Sink.Commit─▶ ProposeBatch   ▼                     ▼
//	   ▲ semi-sync ACK           logSource ─▶ replserver    role loop
//	   │                                         │ binlog        │ read_only / STOP SLAVE
//	MariaDB (master) ◀────────── or ──────────── MariaDB (replica of own binlogd)
//
// A big transaction reaches the log as entries of 512 KiB (sink.go), at
// most fragmentsAhead of them queued and not yet applied at once, across
// capture's pieces: the log pipelines them without crowding the lease's
// renewals out; capture's BufferBytes bounds the bytes held.
//
// The loops:
//
//  1. supervise: init the datadir, cut the binlog back to the log
//     (recovery) before every mysqld start, start, bootstrap accounts,
//     restart when it dies; adopt the mysqld a graceful stop of an
//     earlier binlogd handed off (adopt.go: record, identity, read_only,
//     binlog checked against the log), and SIGKILL and recover one a
//     crash left behind.
//     A cut that would remove DDL (or a write to a non-transactional
//     table), or any cut after a clean shutdown, cannot be undone by
//     MariaDB: the node goes UNSAFE with a reseed message and its mysqld
//     stays stopped, rather than rejoin with a forked schema. So does a
//     datadir InnoDB refuses to recover, after two starts that fail alike
//     (datadir_lost.go; status reseed_needed). binlogd
//     talks to its MariaDB as the socket-only admin (mysqld.AdminUser).
//  2. election: masterlease.Run, asking for the lease only when this
//     node's MariaDB has applied the whole valid log.
//  3. role: the pure controller binlogd/rolectl decides, a thin driver
//     (roles.go) carries its actions out under one lock. On a ready grant
//     for a MariaDB that applied every valid batch before it: make it
//     durable and flush it, STOP SLAVE, semi-sync on, read_only off,
//     capture from the last valid GTID, and, while the term lasts, make
//     MariaDB's binlog groups wait a little for more transactions when
//     commits overlap (groupwait.go: they share one Paxos round; a
//     replica turns the wait off). The driver looks when the lease
//     publishes a change, when its own deadline passes (a timer at the
//     deadline), when the node's own state moves (MariaDB up or down,
//     applied position of a master or candidate: wakeRole), and every
//     lease RetryInterval otherwise; no fixed tick. On losing the lease (expired,
//     newer term, rejected batch, capture failure): read_only on at once,
//     stop capture, and SIGKILL mysqld if any commit waits for an ACK (a
//     graceful shutdown would commit it in InnoDB); the supervisor restarts
//     it through recovery, which cuts what the log does not hold. Every
//     2 s a replica is re-pointed at its own endpoint if needed and runs
//     relaxed: no fsync per commit, 4 parallel apply threads
//     (relaxed.go). Its durability is the log: a marker says it was
//     relaxed, and a start after a host crash resets its binlog to
//     InnoDB's slave pos (role.ResyncBinlog) so replication fetches the
//     lost tail again; log retention counts only what each member's
//     InnoDB has synced (LSN-tracked, Status.mysql_durable_gtid_pos).
//  4. poll (poll.go): MariaDB's applied GTID, redo LSNs and replication
//     state, for the election condition, the catch-up check, and status;
//     every 100 ms while anything moves, once a second while MariaDB is
//     settled (whole log applied and synced, replica without lag), since
//     then it only re-reads the same answers at a real cost; settled, it
//     sleeps until the log or the lease moves, MariaDB restarts, or a
//     query is due, rather than waking every 100 ms to find no work. Position,
//     LSNs and Slave_running come in one round trip each poll; the wide
//     SHOW SLAVE STATUS (lag seconds, state text) at most once a second
//     unless a thread starts or stops or the term changes. Status (admin.go,
//     status_extra.go) also reports the build (binlogd/version), whether
//     MariaDB answers, and replica lag: valid transactions MariaDB has not
//     applied, and its Seconds_Behind_Master (0 on the master, which is
//     the source); `binlogd cluster status` shows them per member.
//
// Stopping (handover.go): on SIGTERM the loops keep running while a
// master hands over (switchover to the most caught-up serving member,
// waiting at most two leases for it to serve; else fence as before).
// Then, with KeepMySQLOnStop (`binlogd run -keep-mysql`, the systemd
// unit), a replica's MariaDB is left running, read-only, for the next
// binlogd to adopt (rolectl Handoff); without it MariaDB stops safely.
//
// A witness (witness.go; config members[].witness) runs only the Paxos
// node, the gRPC services, retention and a lease-following loop: no
// MariaDB, capture, replication endpoint or role controller. It never
// asks for the lease and no switchover or handover names it; its status
// role is WITNESS. Retention skips witnesses, and a witness compacts its
// log to what the data nodes' MariaDBs durably applied.
//
// A learner (learner.go; config members[].learner, or `binlogd members
// add -learner`) is a data node like a replica (MariaDB, capture,
// replication, its status role REPLICA with NodeStatus.learner set) whose
// binlogd never votes on the log: it never asks for the lease, no
// switchover or handover names it, and if it holds the lease when its
// demotion is chosen it switches over at once. PromoteMember (refused
// unless its applied index is within PromoteMaxLag = 2 x Alpha of the
// answering node's chosen index and its MariaDB is up) and DemoteMember
// (refused for the master, a witness and the last data voter) are each
// one membership change through the log.
//
// Members (members.go) come from the Paxos log, not the config file: the
// Admin service's AddMember/RemoveMember propose a change through it,
// Status lists the current members (sqlproxy follows them), the Paxos
// transport dials added members and drops removed ones, and a node that
// is not a member (joining, or removed) never asks for the lease.
//
// Log digests (logdigest.go, paxos/digest.go): Status carries the node's
// newest Paxos log range digests and the divergences it saw (a peer's
// digest of a range differing from its own: the logs fork there), the
// metrics count them, and a node that the majority of the digests it
// knows names as odd never asks for the lease. Nothing else changes on a
// divergence: a digest is a peer's word, and one stolen key must not be
// able to keep the healthy nodes from becoming master.
//
// The gRPC server (Paxos, Admin, grpc.health.v1) runs in mutual TLS (the
// config's tls_* keys; without them the config is refused unless it says
// "insecure_no_tls", and then the node warns every minute), and every dial
// to a peer presents this node's certificate and accepts only member N's
// certificate (phxgo://node/N) from member N (tls.go dialOptionTo: the
// Paxos stream per peer, peerAdmin per member, ids from the current
// membership). Reload (SIGHUP,
// Admin Reload; reload.go, tlsreload.go) re-reads the tls_* files and the
// log level without a restart: every handshake looks up the current
// certificate and CA, so new connections use the new files and open ones
// keep theirs; a file that does not load leaves the old one in use. Who may call what
// is decided by the identity in the caller's certificate (authz.go):
//
//	Paxos Send                     node certs only; a message whose From
//	                               is not the sender's node id is dropped
//	                               and counted
//	Admin Status                   node, proxy, admin
//	Admin Members                  node, admin
//	Admin RecoverPoint             admin, or a node asking about itself
//	Switchover, Add/RemoveMember,  admin
//	Promote/DemoteMember
//	Admin Backup                   admin, or a node reseeding itself (backup.go:
//	                               mariadb-backup for `binlogd reseed`; not on the master unless forced)
//	Admin ReadWindow               node (forwarding for a proxy), proxy, admin
//	grpc.health.v1                 any certificate of the CA
//
// and everything else is PermissionDenied.
//
// Before a certificate is seen, a stranger can cost the gRPC port only
// bounded memory and CPU (rpcguard.go, rpcrate.go): at accept, a source
// address over its budget of new connections (20 a second, 64 at once)
// while the node as a whole gets more than 100 a second is closed before
// any TLS work, unless it is a member's address; then at most 128
// connections are in their TLS handshake (5 s each; the oldest of the
// busiest address goes for a newcomer) and 2,048 past it.
//
// Who MariaDB takes a PROXY header from (proxynets.go): binlogd keeps
// MariaDB's proxy_protocol_networks at the members' addresses (witnesses
// aside; plus an operator's mysql_extra entries), set when MariaDB starts
// and on every member change, so the proxies' headers name the client and
// MariaDB applies the client's own account (sqlproxy/proxyproto.go).
// Every address listed may claim any client address, so nothing else is.
//
// Read windows (windows.go): the master lends a non-master proxy a share
// of its lease (at most d/5 + m) so the proxy may send to the master's
// MariaDB directly, and its own proxy one to serve from its MariaDB at
// all; the proxies learn the status from the WatchStatus push (watch.go),
// which carries no deadline they could trust. A Fence or Switchover by this node waits until every
// window it granted has ended before it is proposed. Health is SERVING while the
// node runs and
// NOT_SERVING once it starts stopping (health.go) or its Paxos storage
// failed (storage.go).
//
// A wal write, fsync or full-disk error stops the Paxos node; binlogd
// then takes itself out of service and stays up, unhealthy, until the
// operator restarts it (storage.go says what it does and why it does not
// exit): health NOT_SERVING, /healthz 503, status UNSAFE "storage failed",
// phxgo_binlogd_storage_failed 1, no lease requests or renewals, and a
// master steps down (read_only on; SIGKILL when commits wait for an ACK).
package node
