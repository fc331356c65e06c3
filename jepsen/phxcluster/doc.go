// Package phxcluster is the Jepsen harness's Launcher for a real phxgo
// cluster: it adapts binlogd/localcluster (per node a `binlogd run`, which
// supervises its mariadbd, and a sqlproxy) to the jepsen/cluster contract.
//
//	harness (127.0.0.1, outside the namespace, dials in with setns)
//	   │ MySQL to sqlproxy        │ gRPC Status to binlogd
//	   ▼                          ▼
//	┌─ namespace phxjepsen-<pid> ───────────────────────────────────────┐
//	│ node1 127.0.0.2   node2 127.0.0.3   node3 127.0.0.4   ...         │
//	│  sqlproxy ──(-source-ip own host)──▶ master node's sqlproxy       │
//	│  binlogd  ──(dials from own host)──▶ peers' binlogd (Paxos)       │
//	│  mariadbd (bind-address = own host) ◀── local binlogd (repl)      │
//	└───────────────────────────────────────────────────────────────────┘
//
// Every inter-node socket carries its node's address, so the harness's
// iptables rules (by source and destination address) cut exactly the
// links they name; a node's talk to its own processes is never cut, and
// neither is the harness's (source 127.0.0.1).
//
// Mapping of the contract:
//
//   - KillMysqld / KillBinlogd / KillNode: SIGKILL, wait until gone.
//     binlogd restarts a dead mariadbd by itself (recovery first); a
//     killed binlogd adopts its still-running mariadbd when Restart starts
//     it again.
//   - Restart: localcluster.StartNode (starts binlogd and sqlproxy when
//     down), then waits until both run.
//   - Pause / Resume: SIGSTOP / SIGCONT of binlogd (or all three); the
//     stopped pids are remembered, so Resume continues exactly those.
//   - Master: the node that reports itself ready master, preferring the
//     claim most nodes agree with.
//   - WaitHealthy: localcluster.Healthy (one ready master in every view,
//     every replica caught up with the log) AND every node's sqlproxy
//     answers a query; the first time it also creates the "jepsen"
//     database. Recovery time as the harness measures it therefore
//     includes the client path. A node whose status says its MariaDB
//     datadir cannot be recovered (UNSAFE, reseed_needed) is reseeded
//     from a replica on the way, as an operator would (reseed.go; at most
//     twice per node, listed in the results as reseeded): a disk can
//     lose a datadir, and the checker still judges every acknowledged
//     write.
//   - Options.LazyFS: each node's directory (binlogd.json, the Paxos log,
//     MariaDB's datadir and socket) is a jepsen/lazyfs mount over
//     <Dir>/disks/nodeN, served by a helper process per node (`jepsen
//     lazyfs-serve`, Options.LazyFSServer; its log beside the backing
//     directory), never by the harness; checkpointed once the cluster is first healthy
//     (the installation is on disk). PowerCut (the power nemesis)
//     SIGKILLs every process of the chosen nodes at one instant, waits
//     until they are gone, and drops what each node had not fsynced;
//     Restart then runs the normal recovery. A new file's name is durable
//     with the file's fsync (ext4's habit): MariaDB 10.11 never fsyncs its
//     datadir after CREATE TABLE (LazyFSStrictNames for POSIX strictness).
//     The logs (binlogd.log, sqlproxy.log, error.log) survive a cut.
//   - Witnesses and learners (LaunchSpec.Witnesses, .Learners; localcluster
//     Spec.Witnesses, .Learners): a witness's Node has no proxy or MariaDB
//     address; Pause of all its processes stops its binlogd, KillMysqld
//     refuses (ErrNoMariaDB; the nemesis kills its binlogd instead),
//     Restart waits for binlogd only, and WaitHealthy asks no query of it.
//     WaitHealthy also checks that every learner's status says learner and
//     that the master is neither.
//   - Stop: SIGKILL of everything (the data is scratch), then each node's
//     binlogd.log, sqlproxy.log, MariaDB error.log and its Paxos log with
//     verdicts (`binlogd log`, and `-rejected`) are copied to LaunchSpec.LogDir.
package phxcluster
