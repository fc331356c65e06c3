// Package masterlease holds phxgo's master lease and fencing rules: the
// deterministic state machine applied to every entry of the one Paxos log,
// and each node's timing of the lease on its own monotonic clock.
//
// # Replicated state and rules (Step, pure)
//
// State is {Version, Epoch, Master, LastGTID, Partial} plus bookkeeping
// indexes. Every node applies the log in index order with Step, which
// reads no clock and does no I/O, so all nodes compute the same state and
// the same Verdict for every entry; a reader replaying the log from a
// snapshot with Step learns the same verdicts (binlogd's replication
// endpoint ships only valid batches this way).
//
//	LeaseRequest{candidate, seen, renew}
//	    seen != Version                   -> reject version_mismatch
//	    renew && candidate != Master      -> reject not_holder
//	    renew                             -> Version++                 (same term)
//	    otherwise                         -> Version++, Epoch++, Master = candidate,
//	                                         Partial = none            (new term)
//	Fence{epoch}
//	    epoch != Epoch                    -> reject stale_epoch
//	    Master == 0                       -> reject no_master
//	    otherwise                         -> Version++, Epoch++, Master = 0, Partial = none
//	BinlogBatch{epoch, prev, last, events, checksum, txn_count, more, continued}
//	    malformed (no events, no last, completes nothing)   -> reject malformed
//	    CRC32C(events) != checksum        -> reject bad_checksum
//	    epoch != Epoch                    -> reject stale_epoch
//	    Master == 0                       -> reject no_master
//	    prev != LastGTID, or last not after it in the one domain -> reject chain
//	    fragment rules broken             -> reject bad_fragment
//	    more                              -> Partial = last
//	    otherwise                         -> LastGTID = last, Partial = none
//	entry version > EncodingVersion       -> reject unknown_version
//
// A rejected entry changes nothing; its Verdict (reason, detail, expected
// and got GTIDs) is Apply's result, returned to the proposer by the log.
//
// Fragments: a huge transaction travels alone over several entries. The
// first has more; the middle ones continued+more; the last continued and
// txn_count 1; all carry last = that transaction's GTID and prev = the last
// complete one. Between them State.Partial names it; any new start while it
// is set, or a continuation of anything else, is bad_fragment, and a term
// change voids it (the old master's remaining fragments then fail the epoch
// check, and its MariaDB is cut back by recovery).
// binlogd's capture proposes a transaction's fragments as its events
// arrive from the master's binlog, before the client's COMMIT is
// acknowledged (the ACK waits for the last one), so a split transaction
// may sit half in the log for a long time and be voided there; readers of
// the log (binlogd's replication endpoint) ship it only once the last
// fragment is valid.
//
// Why the epoch and not only the chain: Paxos may choose a value long after
// its proposer died (a later leader re-proposes what a minority accepted),
// and after a master's binlog is cut MariaDB reuses the cut sequence
// numbers. Such a stale batch can carry exactly the prev_gtid that is still
// the last valid one, so the chain check passes; its old epoch does not
// (TestStaleBatchPassesChainNotEpoch, and the simulation's limbo batches).
//
// # Lease timing (Lease, per node)
//
// Time is not in the state. Each node keeps, on its monotonic Clock:
//
//	holder:    deadline = start + d - m  (start: read before it proposed the
//	                                      request that won or renewed)
//	follower:  expiry   = apply + d      (apply: when it applied the last
//	                                      valid LeaseRequest)
//
//	holder A   |--propose(start)---chosen---------------renew@d/3 ...---|deadline
//	                       \            \
//	follower B              applied(t_B) ------------------------------------|t_B + d
//	                                       B may propose only after here ^
//
// A follower applies a grant after it was proposed, so its expiry is later
// than the holder's start + d; the margin m covers clock rates: with every
// clock within ±ε of true time, (d-m)/(1-ε) <= d/(1+ε) holds for
// ε <= m/(2d-m) (Config.MaxClockDrift; 5.2% for 5 s and 500 ms).
// CAS on the version makes "B proposed with a stale view" harmless: a
// request that did not see the holder's latest renewal loses.
//
// Rules of the election loop (Run, every RetryInterval):
//   - the holder renews RenewInterval (d/3) after the start of the proposal
//     that gave its deadline;
//   - a node asks for a new term only when its view says expired (expiry
//     passed, or the master fenced itself, or it is the master in the state
//     without a valid deadline of its own) and canAcquire() holds;
//   - a holder whose own view lapsed may not renew; a renewal chosen after
//     a lapse gives no deadline, so the node must win a new term. A new
//     term voids everything in flight from the old one;
//   - a grant this process did not propose (Switchover by the old master,
//     or a request of a previous life) gives no deadline either.
//   - after a restart (Restore) a node holds no lease, and as a follower it
//     waits a whole d from the restart.
//   - a Fence by the master itself (after it dropped its deadline) lets the
//     others elect at once; a Fence by anyone else (recovery of a crashed
//     master) leaves their expiry as it was, since that master might still
//     be serving.
//
// A new holder is Ready (RoleMaster) only after MarkCaughtUp(i) with
// i >= the index of the last valid batch before its term: its MariaDB has
// applied everything valid. Until then it is RoleCandidate.
//
// # The hung master
//
// A master stopped (SIGSTOP, GC, swap) past its deadline resumes believing
// nothing happened. It must check Deadline() against its clock before every
// write or linearizable read; the clock ran on while it was stopped, so the
// check fails and it stops serving. A batch it had prepared before the stop
// and proposes after is either chosen before any new term (then it was
// legitimately its own, proposed under a valid lease and nobody else has
// served) or after a new term, where its epoch is stale and every node
// rejects it; binlogd then cuts it from that MariaDB (see DESIGN.md,
// Pending binlog and recovery).
//
// # Invariants
//
//   - At most one node holds a valid deadline at any instant (given the
//     drift bound), checked by the seeded simulation in sim_test.go.
//   - Every node computes the same verdict for every index.
//   - A valid batch's epoch is the epoch of the term that chose it; a term's
//     batches form one GTID chain.
//
// # Hostile entries
//
// A chosen entry may be anything a forged or broken peer got into the log:
// Step decodes it and rejects what breaks a rule with a Verdict, never a
// panic, and changes nothing but Applied then. FuzzStep applies arbitrary
// entries at arbitrary indexes and checks that Version and Epoch never
// decrease (one step at a time), an epoch has at most one master, a Fence
// leaves none, and the state survives its snapshot encoding. A peer's
// snapshot is checked before the engine makes it durable
// (CheckSnapshot, paxos.SnapshotChecker): one that does not decode is
// dropped instead of stopping the node at every restart.
package masterlease
