// Package jepsen tests a whole phxgo cluster the way Jepsen does: clients
// run operations through the sqlproxy ports while a nemesis kills, pauses,
// partitions and restarts nodes; every operation is recorded with its
// invoke and complete times; checkers judge the history afterwards.
//
//	cmd/jepsen ─▶ Run(cfg, Launcher)
//	  1 remove stale namespaces phxjepsen-<dead pid>; ensure iptables
//	  2 create namespace phxjepsen-<pid>, lo up (netns)
//	  3 Launcher(LaunchSpec) ─▶ Cluster (nodes on 127.0.0.2 …; 127.0.0.1 = harness)
//	  4 WaitHealthy; workload Setup (schema) through a proxy
//	  5 for -time: clients (workload) ‖ nemesis schedule ─▶ history.Recorder ─▶ history.jsonl
//	  6 heal everything, WaitHealthy (recovery time), final reads
//	  7 checkers ─▶ results.json (+ linearizability.html for register)
//	  8 always: Cluster.Stop, namespace deleted (killing stragglers), scratch dir removed
//
// Clients reach the namespace without running in it: go-sql-driver's
// network "phxjepsen" dials on a thread switched into the namespace with
// setns(2) (netns.DialContext). Processes start with "ip netns exec".
//
// Sub-packages: cluster (the contract a launcher implements), phxcluster
// (the launcher of a real phxgo cluster, over binlogd/localcluster; what
// cmd/jepsen uses), history (operations and the recorder), workload
// (register, bank, set, append), nemesis (faults and schedule), netns
// (namespace and iptables), checker.
//
// Tests: TestRunEndToEndSoloMariaDB runs the harness against one bare
// MariaDB (the harness's own plumbing); TestJepsenShort is the CI run
// against a real 3-node cluster built from the tree (register, kill and
// partition in turn, 45 s); crash_short_test.go adds about a minute each
// of append under kill-majority, under logd (with a latency bound) and on
// the read/write-split port under kill; roles_short_test.go runs append
// with a witness (2 data nodes + witness: the master's processes killed,
// the witness paused) and with a learner (3 voters + learner, every
// rw-split port). scripts/jepsen-matrix.sh (make jepsen) runs every
// workload under every nemesis, and the witness and learner cells under
// all, and prints a table.
//
// Witnesses and learners (Config.Witnesses, Config.Learners; -witnesses,
// -learners): a witness runs binlogd only, so it gets faults (its binlogd
// killed, paused, cut off, restarted) but no clients, setup or final
// reads, and no MariaDB comparison. A learner's proxy takes clients like
// any: its linearizable port sends every statement to the master, so
// every workload may use it; its read/write-split port may serve reads
// from its own MariaDB, which only append -rwsplit accepts (stale
// snapshot reads allowed, checked for what that port promises).
//
// Validity of a run: the checkers' verdicts combined (any false is false,
// else any unknown is unknown), plus false if the cluster did not become
// healthy again once every fault was healed, plus unknown if interrupted.
package jepsen
