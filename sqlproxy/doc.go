// Package sqlproxy is phxgo's MySQL-protocol proxy. Clients connect with
// any MySQL/MariaDB client; each node runs one proxy next to its MariaDB
// and binlogd.
//
//	client ──▶ proxy(node B, not master) ──hop──▶ proxy(node A, master) ──▶ MariaDB A
//	               └──────── with a read window (One hop, below) ─────────▶ MariaDB A
//	               │ (1) authenticate (auth)            │ (3) lease check before
//	               │ (2) route (Linearizable: master)   │     EVERY statement
//	               └─ rw-split reads ──▶ MariaDB replicas (health-checked)
//
// Linearizable port (default). Every statement runs on the master. The
// master node's proxy sends a statement to its MariaDB only while its own
// lease deadline (topology.View.LeaseDeadline: the end of the read window
// its own binlogd lent it, One hop below) is in the future, checked right
// before the send; otherwise it waits up to
// Config.MasterWait for a new view and then answers
// 1290/HY000 "phxgo: no master with a valid lease", having sent nothing.
// A non-master proxy forwards to the master node's proxy over the same
// MySQL protocol, marking the connection with the connect attribute
// _phxgo_hop=1; a proxy never forwards a hop again (it serves it as
// master or refuses), so there are no forwarding loops.
//
// One hop. A non-master proxy that holds a read window (window.go,
// topology.Window) sends statements straight to the master's MariaDB
// (route "direct") and forwards to the master's proxy only without one.
// topology.Admin asks its local binlogd for the window (Admin.ReadWindow;
// binlogd forwards to the master's binlogd) at local time t0, read
// before the send; the master grants w = min(its own lease left, d/5+m)
// only while it holds a valid lease and serves writes; the proxy uses
// the window until t0 + w - m (m: the lease's DriftMargin, sent in the
// reply), re-checked right before every send like the master's lease,
// and asks again once half of it is used. A window that cannot be
// renewed simply runs out: the session then forwards as before (a
// transaction open on the direct route then gets 1290/40001; one open on
// a forwarded connection stays there while it lasts).
//
// Why no other master can serve while a window runs (every clock's rate
// within ±ε of true time, ε <= m/(2d-m), masterlease.Config.MaxClockDrift):
//   - Expiry (the master crashes, pauses or is cut off). The master
//     measured w at its grant time g, and g is after t0 in real time, so
//     the window ends, in real time, no later than t0 + (w-m)/(1-ε); the
//     master's deadline is no earlier than g + w/(1+ε). (w-m)/(1-ε) <=
//     w/(1+ε) iff ε <= m/(2w-m), which holds because w <= d-m gives
//     m/(2w-m) >= m/(2d-3m) > m/(2d-m). So a window ends before the
//     granting master's deadline, and masterlease already keeps every
//     other node from serving before that (a follower counts d from when
//     it applied the grant; a new master waits that out). Nothing to add.
//   - Early step-down (Fence, Switchover): the master drops its deadline
//     and the others may elect as soon as the entry is chosen, long
//     before the old deadline; Fence's stand-down of one LeaseDuration
//     only keeps the old master from asking again. So window <= lease is
//     not enough here: binlogd puts a gate between the lease and the log
//     (binlogd/node/windows.go) that holds a Fence or a grant to another
//     node back until the latest window it granted has ended on its own
//     clock (g + w, in real time at least g + w/(1+ε): after the
//     window's end by the same inequality). Grants read the lease deadline under the
//     gate's mutex and the step-down drops it first, so no window is
//     granted after the gate looked. Switchover renews windows only up
//     to the end already granted while the target catches up, so the wait
//     is usually over by then.
//
// The master node's own proxy. topology.Admin learns binlogd's status
// from the Admin.WatchStatus stream: pushed at once on every change of
// role, readiness, master, epoch, members, UNSAFE or MariaDB up, and once
// a second besides (a binlogd without it is polled with Admin.Status).
// A pushed status cannot say how long this node may serve: the proxy
// cannot tell how old a message is, so a deadline derived from its
// lease_remaining_ns could end after binlogd's. The polled status had the
// same flaw on an early step-down: the deadline was the send time plus
// the lease left, and a switchover's grant could be chosen while the old
// master's proxy still served from its MariaDB until the next poll. So
// the master's proxy serves only under a window of its own, asked from
// its own binlogd exactly as above (t0 before the request, t0 + w - m),
// and LeaseDeadline is that window's end. Both bullets then cover it
// unchanged: on expiry it ends before the master's deadline; on an early
// step-down the gate waits it out before the Fence or the grant is
// proposed, so the proxy has stopped before any other node can be
// elected, whenever (or whether) the push arrives. The push only makes
// it stop at once rather than when the window runs out. Cost: w <= d/5
// + m, renewed when half of w - m is used, so a proxy asks about twice
// a second (d = 5 s) and receives one status a second, instead of 20
// Status calls; a renewal late by more than (w - m)/2 (a stalled
// binlogd) makes the master's proxy wait (MasterWait) for the next one.
//
// Tests: topology's TestWindow* (the arithmetic, fake times) and
// TestAdmin* (against a gRPC binlogd the test drives: the master serves
// only under its window, a step-down is pushed, a broken stream reopens,
// an older binlogd is polled), binlogd/node's TestEndsTerm and
// TestReadWindowsArithmetic, TestE2ESwitchoverOwnProxy (a real cluster:
// the old master's proxy's last deadline ends before the switchover's
// grant is chosen), and
// TestE2EOneHopWindow (a real cluster: one hop while the window holds,
// back to forwarding when the master is paused or killed, no stale read).
//
// Authentication is MariaDB's: see package auth. The account is the
// user's mysql.user row whose Host matches the client's real address
// (MariaDB's order, most specific first); on a forwarding hop verified by
// TLS the master's proxy judges the original client's address, which the
// hop carries as the connect attribute _phxgo_client (an unverified
// hop's claim is ignored). Only accounts with a mysql_native_password
// hash log in; root, phxgo_* (phxgo's own accounts), mariadb.sys, mysql
// and the proxy's admin user never do (Config.DenyUsers, -deny-users).
// Backend connections log in as the client's own user with SHA1(pw)
// recovered from the client's token, so MariaDB enforces privileges; its
// errors (code and SQLSTATE) are relayed unchanged. MariaDB applies the
// client's own row, not the one of the proxy's address: a connection to a
// MariaDB over TCP opens with a PROXY protocol v2 header naming the
// client (proxyproto.go; MariaDB takes it from the members' addresses,
// which binlogd lists in proxy_protocol_networks), and the unix socket is
// used only when localhost's row is the client's. A MariaDB that refuses
// the header gets a login without it only when it would apply the
// client's row to the proxy's address too; otherwise the client gets 1045.
//
// Strangers (guard.go). At most Config.MaxConnections clients (ERR 1040
// beyond); before login 4 KiB buffers, packets of at most 68 KiB
// (wire.MaxHandshakePacket) and Config.LoginTimeout for the whole login;
// after it packets up to max_allowed_packet (ERR 1153 and closed beyond).
// No read allocates for a length it was only told about. A panic in a
// session closes that client and its backends only.
// A client address past its budget of failed logins as a user
// (Config.LoginFailureBurst, loginbudget.go) is refused with 1129 before
// its password is checked.
//
// Relaying is frame by frame (package wire); only OK/EOF status flags are
// read, which gives the transaction state (SERVER_STATUS_IN_TRANS).
//
// Session state. Whether a session is in a transaction, has autocommit
// off, is pinned by unreplayable state or is aborted after a lost
// transaction is one pure state machine (txstate.go, txState.Step): the
// session feeds it events (a backend's status flags, a connection lost
// after or before a send, a route that moved, a statement in the aborted
// state) and carries out the actions it returns (answer the client;
// close, keep or release the backend). Its tests list every transition
// and step random event sequences against a model MariaDB; most session
// tests run against in-process fake MariaDBs (internal/fakebackend), and
// those about real MariaDB behaviour (accounts, TLS, sockets, prepared
// statements, causal reads, the cluster end to end) keep a real one.
//
// Cost per statement. A relayed statement costs four socket operations
// (read client, write backend, read backend, write client), each through
// 64 KiB buffers with one write per flushed response. The backend write
// arms the read wait before it writes (wire.Conn.WriteRequest), so the
// answer is read once it is there, not first tried and found missing:
// a MariaDB answers tens of µs after the write, so that try failed
// (EAGAIN) on nearly every statement. The client's next command still
// costs such a try: a client may pipeline, so what it sent before the
// wait began must be read first. The client's
// command is read into a reused buffer, rows are copied once from the
// backend's read buffer into the client's write buffer, the hold timer is
// armed once per hold window (not reset per statement), the topology view
// is one atomic load, metrics children are resolved up front, and a
// COM_QUERY is classified in place without allocating. Nearly all the
// proxy CPU left is the kernel's write and read (a loopback send wakes
// the peer), so the proxy runs close to a plain Go TCP relay (io.Copy
// both ways), and on shared cores such a relay is itself well below
// direct MariaDB. With Config.MySQLSocket (-mysql-socket) sessions reach
// this node's MariaDB by its unix socket, cheaper per packet than
// loopback TCP. The figures are in the README ("Performance on one
// host", from throughput_test.go and scripts/bench-proxy.sh). Client
// and backend sockets are read and written with raw syscalls through the
// netpoller (wire.NewConnRaw): no P hand-off and no sysmon wakeup per
// read or write, which were a quarter of the proxy's CPU at moderate
// rates; see cmd/sqlproxy's -procs for why it then runs one P per CPU.
//
// Master change. An idle session moves on its next statement: its state
// (database, SET statements, prepared statements re-prepared lazily under
// stable proxy-assigned ids, with the parameter types the client sent
// only once put back into its executes: stmt.go) is replayed on the new
// connection. Only a SET that gives the same result again is replayed:
// one calling anything but a few pure string functions (a subquery,
// NEXTVAL, UUID, a stored function), reading a value that differs on
// another connection (NEXT VALUE FOR, CURRENT_TIMESTAMP,
// @@last_insert_id) or setting a one-shot variable (insert_id,
// timestamp) pins the session to its connection instead, as does SELECT
// … INTO @var; SET STATEMENT ... FOR is its statement, never state
// (classify). COM_SET_OPTION (multi-statements on or off) also pins: no
// reset undoes it, so that connection is closed, never pooled, when the
// client leaves. Commands the proxy does not know the answer's shape of
// (COM_PROCESS_INFO, replication, shutdown, debug, …) get 1047 and never
// reach MariaDB: an answer relayed in part stays on a pooled connection
// for its next client (session 37's red-team test put one client's result
// set into another's query that way). A session
// inside a transaction gets 1290/40001 "transaction rolled back": its
// old backend connection is closed, which rolls the transaction back, and
// every statement fails until the client says ROLLBACK or BEGIN (COMMIT
// also ends it, and fails), so later statements cannot run as if the
// transaction had survived. If a backend breaks mid-statement, the reply
// depends on what the statement could do to an open transaction
// (txstate.go, classify.Effect): DML or a query inside it means the
// transaction rolled back (1290/40001, aborted as above); ROLLBACK
// succeeds; COMMIT, BEGIN, DDL or anything that may commit gets 1927
// "outcome unknown" and leaves no aborted state (drivers send nothing
// after a failed BEGIN or COMMIT). The client connection is closed if it
// already saw part of the answer. Error codes the proxy itself sends:
//
//	1290 HY000  not run anywhere (no master with a lease, backend unreachable): definite
//	1290 40001  the transaction was rolled back; nothing of it committed: definite
//	1927 08S01  backend lost after the statement was sent: outcome unknown
//
// Dead peers and orphaned transactions. A partition (iptables DROP) sends
// no RST, so a connection to a vanished peer would stay up for TCP's
// minutes. Every client connection and every backend connection (MariaDB,
// the master's proxy) gets keepalive probes and TCP_USER_TIMEOUT
// (Config.PeerTimeout, default 5 s): a silent peer fails its connection
// after about that long (peer.go). When a non-master node is cut off
// while its client is inside a transaction, the master's proxy thus ends
// the forwarded session and closes its MariaDB connection, which rolls
// the transaction back and frees its row locks for everyone else. Linux
// applies TCP_USER_TIMEOUT to a zero window as well (a live server that
// does not read): a LOAD DATA LOCAL relay lifts it from its backend until
// the load's answer, as a row waiting for a lock stops MariaDB reading
// the file for as long as the lock wait lasts (wire/patience_linux.go).
// Independently, a forwarded session (hop) idle inside a transaction for
// Config.IdleInTxTimeout (default 10 s) has its backend closed and gets
// 1290/40001 on its next statement (idletx.go); clients connected to the
// master's own proxy are bounded by PeerTimeout only.
//
// Read/write split (RWSplit, Causal): Cetus rules in route.go. Precedence:
// transaction/pinned state, then /*#mode=readwrite*/ and
// /*#mode=readonly*/ hints, then MasterPreferred, then
// ReadMasterPercentage; reads need no FOR UPDATE / LOCK IN SHARE MODE; no
// healthy replica means the master. Replicas are checked by health.go
// (read_only on: a read may call a stored function that writes, and
// read_only is what refuses it there; replication running,
// Seconds_Behind_Master <= MaxReplicaLag, and at
// most MaxReplicaBehind transactions behind the master's
// @@gtid_binlog_pos).
//
// Causal mode (causal.go) adds read-your-writes: after a session's write
// commits on the master the proxy reads @@last_gtid on that connection
// (@@gtid_binlog_pos through a forwarding hop); a replica then serves the
// session's reads only once it is known to cover that position (an
// earlier wait, a health check) or SELECT MASTER_GTID_WAIT(pos,
// CausalWait) returns 0 there; otherwise the read runs on the master.
//
// Capabilities. The proxy greets as a MySQL (CLIENT_MYSQL set), so
// clients ask for none of MariaDB's extended capabilities. It must not
// pass on MARIADB_CLIENT_CACHE_METADATA as it stands: a backend's "no
// metadata" answer refers to that backend statement's last definitions,
// and the proxy maps one client statement onto many backend statements
// (re-prepares on pooled connections, reads spread over replicas), so a
// client would decode rows with stale definitions
// (TestPreparedMetadataAcrossConnections).
//
// Pooling. Backend connections are pooled per (address, user, login
// secret, capabilities, charset, client origin: the address its PROXY
// header names, so one opened for a client at one address never serves
// one at another). After a statement a session keeps its
// connection for Config.Hold (Cetus: 256ms) so a busy session does not
// re-sync state; inside a transaction, with unreplayable state
// (temporary tables, LOCK TABLES, GET_LOCK, SQL PREPARE, multi-statements,
// user variables assigned in queries) or autocommit=0, it keeps it for
// good. A pooled connection handed to a different session is reset with
// COM_RESET_CONNECTION and gets that session's state replayed.
//
// Source address. With Config.SourceIP (flag -source-ip, default the host
// of -listen when it is a specific IP) every outgoing connection — backend
// MariaDBs, the master's proxy, health checks, mysql.user reads — binds
// its local address to that IP (DialFrom), so a partition cut by address
// pairs (the Jepsen harness) cuts the proxy's traffic too.
//
// Security (security.go, guard.go). Config.Allow lists the client networks that may
// connect; others get ERR 1130 before the greeting. What a client may do
// in MariaDB is what its own mysql.user row for its real address grants
// (proxyproto.go): never the row of the proxy's address. Config.PeerTLS wraps
// the forwarding hop in mutual TLS (a MySQL SSLRequest upgrade on the
// master's client port) and makes the master's proxy refuse a hop that is
// not TLS with a certificate of the cluster CA; the forwarder accepts only
// the master's own proxy certificate (proxy M, M the master in the view
// the route was chosen in: poolKey.node). Config.MySQLTLS (mysqltls.go)
// wraps every connection to a MariaDB over TCP (backends, health checks;
// auth.Config.TLS for the mysql.user reads) in TLS checked against the CA
// for the certificate of the member at that address (node K: poolKey.node
// for backends, MySQLNodeAt of the current view for pooled sql.DBs), and
// refuses a MariaDB without TLS.
//
// Kills (kill.go). Every KILL (and COM_PROCESS_KILL) is refused with
// 1235 (also as a prepared statement, after another statement, or as a
// literal in PREPARE … FROM / EXECUTE IMMEDIATE; classify.Info.Kills): on
// MariaDB, killing the query of a session whose COMMIT waits for the
// semi-sync ACK returns OK to that client before the Paxos log holds the
// transaction, and killing the connection of a group commit's leader
// released the commits queued behind it with OK; a master change then
// cuts them. All clients share the backend account, so one client could
// do it to another. Text built at run time (PREPARE FROM @v, EXECUTE
// IMMEDIATE CONCAT(…), a stored procedure) is not seen; binlogd's capture
// still notices such a release afterwards (no_tx) and marks the node
// UNSAFE.
//
// Reload (reload.go; SIGHUP in cmd/sqlproxy). Server.Reload re-reads the
// TLS files of Config.PeerTLS and Config.SettingsFile and puts them in
// force together or not at all: a bad file, another identity's
// certificate or a rule out of range is logged with the file and
// counted (phxgo_sqlproxy_reloads_total{result="error"}) and the old
// settings stay; phxgo_sqlproxy_tls_cert_expiry_timestamp_seconds shows
// the certificate in force. Every TLS handshake (MySQL port, hop, binlogd gRPC)
// takes the material current at that moment (tlsreload.go), so open
// connections keep the session they negotiated. Routing code reads the
// rules through Server.rules() once per decision, never Config's start
// values; the level is Config.LogLevel's LevelVar. No listener triggers
// a reload: the HTTP port authenticates nobody.
//
// Invariant: a backend connection is owned by one session or by the pool,
// never both; a connection whose transaction outcome is in doubt is closed,
// never pooled.
package sqlproxy
