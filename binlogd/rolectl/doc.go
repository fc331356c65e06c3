// Package rolectl is binlogd's role controller: the pure decision of when a
// node's MariaDB may take writes, when it must stop, and how it stops.
//
// Step(state, event) returns the next state and a list of actions; it does
// no I/O and reads no clock, like masterlease.Step. binlogd's driver
// (binlogd/node/roles.go) feeds it observations of the lease and MariaDB,
// carries the actions out in order (SQL, signals, Fence, capture), and
// feeds back what some of them found (a failed promotion, a count of
// waiting commits) as further events.
//
//	Replica --Observed{ready lease e, up, caught up, safe}--> Master(e)
//	        [LeadPaxos, MakeDurable, OpenWrites, StartCapture(e)]
//	Replica --Observed{ready lease, MariaDB behind}--> Replica [Fence]
//	Replica --Repoint{no ready lease, up}--> Replica [KeepReplica]
//	Master(e) --Observed{lease lost, epoch != e, unsafe}--> Replica
//	        [SetReadOnly, StopCapture, CountWaiting(demote)]
//	Master(e) --StepDown--> Replica (same actions)
//	Master(e) --PromoteFailed(e) | CaptureStopped(e)--> Replica
//	        [MarkUnsafe?, SetReadOnly, StopCapture, Fence, CountWaiting(demote)]
//	any --Waiting(demote){n > 0 or unknown}--> [Kill]
//	Master(e) --Shutdown--> Stopped
//	        [SetReadOnly, AwaitDrained, Fence, StopCapture, CountWaiting(shutdown)]
//	Replica --Shutdown--> Stopped [CountWaiting(shutdown)]
//	Replica --Shutdown{Handoff}--> Stopped(handoff) [CountWaiting(shutdown)]
//	Stopped --Waiting(shutdown){0}--> [GracefulStop]; otherwise [Kill]
//	Stopped(handoff) --Waiting(shutdown){0}--> [Handoff]; otherwise [Kill]
//
// Handoff (issue 23.3) leaves MariaDB running, a read-only replica, for
// the next binlogd to adopt after its checks (binlogd/node/adopt.go); only
// a replica is handed off: a master switches over first
// (binlogd/node/handover.go) and is a replica when Shutdown arrives, or it
// takes the fence path and MariaDB stops.
//
// Durability follows the role (issue 19): a replica runs relaxed
// (sync_binlog=0, innodb_flush_log_at_trx_commit=2; KeepReplica sets it),
// because its durability is the log: after a host crash it re-fetches
// what it lost from its own endpoint. A promotion makes MariaDB durable
// and flushes what it applied (MakeDurable) before OpenWrites turns
// read_only off; a demotion goes back to relaxed with the next repoint.
//
// Invariants:
//   - OpenWrites only follows MakeDurable, in a promotion decided on an
//     observation of a valid, ready lease for the epoch served.
//   - A master that observes its lease gone (or a new epoch, or unsafe)
//     sets read_only before anything else.
//   - MariaDB is stopped gracefully, or handed off, only after a count of
//     zero commits waiting for an ACK; otherwise it is killed (a graceful
//     stop would commit them in InnoDB, DESIGN.md).
//   - Only a node that stops as a replica hands MariaDB off.
//
// The named timings and the server ids derived from a node id
// (CaptureServerID, EndpointServerID) live in state.go.
package rolectl
