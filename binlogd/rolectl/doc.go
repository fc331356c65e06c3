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
//	Replica(armed) --Repoint{no ready lease, up}--> [Release]
//	        --Released{ok}--> Replica [KeepReplica]; otherwise [Kill]
//	Master(e) --Observed{lease lost, epoch != e, unsafe}--> Replica(armed)
//	        [SetReadOnly, StopCapture, CheckQuiet(demote)]
//	Master(e) --StepDown--> Replica(armed) (same actions)
//	Master(e) --SwitchoverAborted{ready lease e, up, safe}--> Master(e)
//	        [MakeDurable, OpenWrites]; otherwise --> Replica(armed) (demote)
//	Master(e) --PromoteFailed(e) | CaptureStopped(e)--> Replica(armed)
//	        [MarkUnsafe?, SetReadOnly, StopCapture, Fence, CheckQuiet(demote)]
//	any --Quiet(demote){not proven}--> [Kill]
//	any --Waiting(demote){n > 0 or unknown}--> [Kill]
//	Master(e) --Shutdown--> Stopped
//	        [SetReadOnly, AwaitDrained, Fence, StopCapture, CheckQuiet(shutdown)]
//	Replica --Shutdown--> Stopped [CountWaiting(shutdown)]
//	Replica(armed) --Shutdown--> Stopped [CheckQuiet(shutdown)]
//	Replica --Shutdown{Handoff}--> Stopped(handoff) [CountWaiting(shutdown)]
//	Replica(armed) --Shutdown{Handoff}--> Stopped(handoff) [Release]
//	Stopped --Waiting(shutdown){0} | Quiet(shutdown){proven} | Released{ok}-->
//	        [GracefulStop]; otherwise [Kill]
//	Stopped(handoff) --Waiting(shutdown){0} | Released{ok}--> [Handoff]; otherwise [Kill]
//
// Armed: a promotion arms the state (semi-sync master on, writes served);
// only a Release that proved the server quiet, or a Kill, disarms it.
//
// A switchover (binlogd/node/admin.go) quiesces its master with read_only
// on and may give up before it proposes the new lease (commits still
// waiting, the target behind). Writes then reopen only by
// SwitchoverAborted, on an observation taken under the driver's lock, by
// the promotion's own MakeDurable and OpenWrites: read_only goes off only
// by the controller. (The admin call used to turn it off itself after its
// own lease check, outside the lock: a master the controller had just
// demoted, or whose lease ran out in between, became writable again.)

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
//   - A server that served writes (armed) is never released (semi-sync
//     off), stopped gracefully or handed off unless CheckQuiet or Release
//     proved, at that moment, that no commit is in flight and its binlog
//     holds nothing the log lacks; otherwise it is killed and recovery
//     cuts what the log lacks.
//
// # Why a count of waiting commits is not a proof (the step-down race)
//
// Measured on MariaDB 10.11.19 (binlogd/role/quiet_test.go reproduces
// each point) and read in its source:
//
//  1. A commit takes the BACKUP COMMIT metadata lock, then checks
//     read_only, then writes and syncs the binlog, then waits for the
//     semi-sync ACK (AFTER_SYNC: the group commit leader waits for its
//     group), then commits in InnoDB, and releases the lock last
//     (handler.cc ha_commit_trans; semisync_master.cc commit_trx).
//  2. SET GLOBAL read_only=ON completes only when it holds the locks that
//     exclude BACKUP COMMIT (sys_vars.cc fix_read_only:
//     lock_global_read_lock, make_global_read_lock_block_commit): it
//     waits for every commit in flight, including one blocked for an ACK.
//     So a completed change is a barrier: no commit is in flight then,
//     and no account without READ ONLY ADMIN passes the check after.
//  3. A demoted master's commits wait for ACKs that never come, so its
//     read_only change times out; MariaDB then leaves read_only OFF (also
//     when the client drops the connection). Meanwhile a transaction
//     whose statements ran earlier commits: read_only is still off, it
//     reaches the binlog, and while another group holds the semi-sync
//     wait it is not counted: Rpl_semi_sync_master_wait_sessions was 1
//     with two unacknowledged commits in the binlog.
//  4. SET GLOBAL rpl_semi_sync_master_enabled=OFF returns every waiting
//     commit OK (Rpl_semi_sync_master_no_tx grows), and so does a KILL
//     QUERY of a waiting commit, which any account may send to its own
//     sessions; the commit stays in InnoDB and the binlog.
//
// So the old demotion (read_only, capture stopped, one count, kill if
// above zero) could miss a commit counted as zero (3) and leave the
// server writable after a timed-out read_only; a graceful stop after a
// zero count could commit it in InnoDB. CheckQuiet and Release therefore
// require, in this order, a read_only change that completed (2), a zero
// count, and gtid_binlog_pos held by the log as valid (which also
// catches (4) after the fact), and semi-sync goes off in the same action
// as the checks.
//
//  5. A DDL checks read_only when it starts, before it takes its backup
//     lock (sql_parse.cc deny_updates_if_read_only_option). Started while
//     the read_only change waited for a running statement, it queued
//     behind the change and ran once read_only was on: measured on 10.11
//     (role/ddl_test.go), a copying ALTER passed CheckQuiet and the
//     release (nothing waiting, not in the binlog yet) and returned OK
//     with semi-sync off, its GTID in the binlog and not in the log. The
//     window is as long as the longest statement the change waits for,
//     not a microsecond. BACKUP STAGE BLOCK_DDL does not close it
//     (measured, same setup): it was granted in 20 ms while the ALTER
//     copied, the ALTER then waited for the backup lock at its end and
//     went on after BACKUP STAGE END. So after the barrier and a zero count
//     CheckQuiet interrupts every client statement still running (none is
//     a commit: the barrier; none waits for an ACK: the count) and waits
//     for each to end before it reads gtid_binlog_pos; the release reads
//     it again after semi-sync off.
//
// The named timings and the server ids derived from a node id
// (CaptureServerID, EndpointServerID) live in state.go.
package rolectl
