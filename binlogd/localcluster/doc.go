// Package localcluster starts a whole phxgo cluster on one machine: per
// node a binlogd (which supervises its MariaDB) and a sqlproxy, each a
// real process started from the project's binaries, with its own
// directory, ports and log files. `make cluster`, the integration tests,
// the Jepsen harness and the benchmarks all start clusters through it.
//
//	<dir>/cluster.json            what is running where (ids, addresses, pids,
//	                              voter and witness per node), the app and
//	                              outside replicas' (repl_user) accounts; 0600
//	<dir>/credentials.json        MySQL secrets (0600)
//	<dir>/node<N>/binlogd.json    the node's binlogd config
//	<dir>/node<N>/binlogd.log     binlogd's log (slog, JSON lines)
//	<dir>/node<N>/mysql/          the MariaDB instance (datadir, my.cnf, error.log)
//	<dir>/node<N>/paxos/          the Paxos log (Badger)
//	<dir>/tls/                    the CA and the nodeN, proxyN and admin
//	                              certificates (Spec.TLSDir to use others)
//
// Spec.Witnesses names nodes that are witnesses: binlogd only (no MariaDB,
// no sqlproxy), voting on the log, never master (`make cluster NODES=2
// WITNESSES=1`). Spec.Learners names nodes that start as learners
// (members[].learner): data nodes that follow the log and serve reads but
// never vote and are never master (`make cluster LEARNERS=1`); RoleIDs
// numbers voters, witnesses, then learners. cluster.json marks each node
// "voter" and "witness". AddLearner adds one to a running cluster
// (binlogd members add -learner); Promote and Demote flip a member
// through the log.
//
// Every link runs in mutual TLS, as on real hosts (tls.go): missing
// certificates are issued at start, binlogd N gets nodeN's, sqlproxy N
// proxyN's, and this package's Admin clients the admin one (AddNode and
// RemoveNode need it). Spec.InsecureNoTLS runs everything in the clear.
//
// Processes are started in their own session, so they outlive the command
// that started them (`make cluster` returns) and a Ctrl-C to a test does
// not reach them; Stop and the tests' cleanup stop them explicitly. A
// network namespace (Spec.NetNS) runs every process under
// `ip netns exec`, so the Jepsen harness can cut links between nodes;
// with Spec.Hosts every node has its own address and all its node-to-node
// traffic carries it: MariaDB binds its host, binlogd dials peers from its
// gRPC host, and sqlproxy gets -source-ip <host> (when the binary has the
// flag) for its connections to other nodes' MariaDB and the master's proxy.
//
// Spec.KeepMySQL runs binlogd with -keep-mysql (a graceful stop leaves
// MariaDB running for the next binlogd, as under systemd); Stop,
// StopNode and RemoveNode then stop it with `binlogd stop-mysql`.
// Spec.EventHook is every node's event_hook ("{node}" is its id).
//
// AddNode, AddLearner and RemoveNode change the members of a running cluster the way
// an operator does (a joining config, binlogd seed from a replica,
// Admin AddMember / RemoveMember); IDs lists the current members.
package localcluster
