// Package nemesis injects faults into a cluster.Cluster and heals them on a
// seeded schedule:
//
//	quiet ─▶ inject fault ─▶ hold ─▶ heal ─▶ quiet ─▶ inject … (until ctx ends, then heal)
//
// Kinds (Config.Kinds) and their variants, chosen by a rand seeded from -seed:
//
//	kill       SIGKILL mysqld, binlogd, or the whole node, on a random node
//	           or the current master; heal = Cluster.Restart
//	pause      SIGSTOP the binlogd or all processes of the master (mostly)
//	           or a random node, held at least 2 leases; heal = SIGCONT
//	partition  isolate one node, isolate the master, majority/minority
//	           halves, or a ring where every node sees a different majority
//	           (needs >= 4 nodes, else halves); iptables rules in the
//	           namespace; heal = flush them
//	restart    rolling restart: each node in turn killed, restarted, and the
//	           cluster awaited healthy before the next
//	kill-majority  SIGKILL every process of a majority of the nodes at once,
//	           every other time of all nodes; heal = Restart of all at once
//	           (binlogd recovery cuts each binlog back to the log) (crash.go)
//	logd       SIGKILL the master's binlogd only; its mariadbd keeps running
//	           with commits blocked in the semi-sync wait; held >= 2 leases
//	           (another node takes over); heal = Restart, whose binlogd
//	           adopts the mariadbd and SIGKILLs it if commits still wait
//	           (crash.go)
//	power      power loss of one node (master or random), then a majority,
//	           then all: every process SIGKILLed at one instant and what
//	           their disks had not fsynced dropped (jepsen/lazyfs); heal =
//	           Restart of them all. Opt-in, not in "all": the Cluster must
//	           be a PowerCutter (phxcluster Options.LazyFS) (power.go)
//
// Kinds beyond the first four add themselves from their own file with
// register (init), so each stays one file.
//
// Every fault window is recorded in the history as one Op (F "nemesis",
// Invoke = start, Complete = heal), which the availability checker reads.
// A fault that could not be injected is recorded with Outcome fail.
//
// The schedule is deterministic given the seed and the cluster's answers
// (Master differs from run to run, so the victims do too).
package nemesis
