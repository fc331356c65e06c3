// Package cluster is the contract between the Jepsen harness and whatever
// starts a phxgo cluster. The harness never starts daemons itself: cmd/jepsen
// is given a Launcher, calls it once with a LaunchSpec (a private network
// namespace, one 127.0.0.x address per node, a scratch directory, the bin/
// directory of `make build`), and drives the returned Cluster: it kills,
// pauses and restarts processes through it, asks it who the master is, and
// waits on it for health after every fault is healed. jepsen/phxcluster is
// the implementation for a real phxgo cluster.
//
// What an implementation must guarantee, beyond the method docs:
//
//   - Every process runs inside LaunchSpec.NetNS (use LaunchSpec.Command, or
//     "ip netns exec"), node i on LaunchSpec.Hosts[i].
//   - Each node's processes bind their OUTGOING inter-node sockets (binlogd
//     to peer binlogd, sqlproxy to the master's sqlproxy, MariaDB replica to
//     binlogd when on another host) to the node's own Host. Partitions are
//     iptables DROP rules by (source, destination) address; an unbound socket
//     gets source 127.0.0.1, the harness's own address, which is never cut.
//   - Node.User/Password is a client account without SUPER or READ ONLY
//     ADMIN, with CREATE, DROP, SELECT, INSERT, UPDATE, DELETE on the
//     database "jepsen" (the workloads create their tables there).
//   - Kill* send SIGKILL and return once the process is gone. Whether the
//     node's supervisor restarts it by itself is up to the implementation;
//     the harness calls Restart when it heals, which must start whatever is
//     down on that node (binlogd's recovery first, as a real operator would)
//     and be a no-op for what is running.
//   - Pids reports 0 for a process that is not running.
//   - LaunchSpec.Witnesses and .Learners name nodes that are witnesses
//     (binlogd only: Node.Witness, no ProxyAddr or MySQLAddr; KillMysqld
//     may refuse) and learners (Node.Learner: a data node that never votes).
package cluster
