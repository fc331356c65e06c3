// Package netns runs a Jepsen cluster inside a private Linux network
// namespace and cuts links inside it.
//
//	harness process (root netns)                 namespace phxjepsen-<pid>
//	┌──────────────────────────┐                 ┌────────────────────────────────┐
//	│ client goroutine ─ Dial ─┼─ locked thread ─┼▶ lo 127.0.0.1 (harness/clients) │
//	│            (setns once, thread dies after) │  127.0.0.2 node 1  ┐ iptables    │
//	│ exec "ip netns exec NS …" ───────────────────▶ 127.0.0.3 node 2  ├ chain       │
//	└──────────────────────────┘                 │  127.0.0.4 node 3  ┘ PHXJEPSEN   │
//	                                             └────────────────────────────────┘
//
// Every address of 127.0.0.0/8 is local on a namespace's loopback once lo
// is up, so each node gets its own 127.0.0.x without configuring anything.
//
// Sockets: a socket belongs to the namespace of the thread that created
// it. DialContext and Listen run the socket call on a goroutine locked to
// an OS thread that was switched into the namespace with setns(2); that
// goroutine exits still locked, so Go discards the thread and no other
// goroutine ever runs in the namespace by accident. After creation the
// socket is an ordinary net.Conn usable from any goroutine.
//
// Partitions: CutLinks installs DROP rules for (src, dst) address pairs in
// a chain PHXJEPSEN jumped to from INPUT (traffic on lo passes INPUT on
// receipt), both directions; Heal flushes the chain. Rules are by address,
// so a node's processes must bind their outgoing inter-node sockets to
// their own 127.0.0.x: an unbound socket on lo gets source 127.0.0.1 (the
// kernel's choice for the 127/8 local route) and would slip through.
// 127.0.0.1 is the harness's own address, and no rule ever touches it, so
// clients keep reaching every node's proxy during a partition, as in Jepsen.
//
// Separate hosts (bridge.go): CreateBridge makes a namespace holding a
// Linux bridge; Attach gives a host namespace a veth into it with its own
// address on a private /24 (no route out), so hosts share one segment and
// nothing else (each keeps its own loopback); SetPort(host, false) cuts a
// host off like a pulled cable. jepsen/hosts runs a cluster this way.
//
// Cleanup: Close kills every process still in the namespace and deletes
// it; RemoveStale deletes namespaces named <prefix><pid> whose pid is dead
// (left by a crashed earlier run).
package netns
