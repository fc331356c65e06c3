package masterlease

// SetBase makes the chain start at g instead of at "none": the state
// before the log's first entry is State{LastGTID: g}, so the first batch
// must carry prev_gtid g and continue g's domain with a higher sequence
// number, exactly as if the batches up to g had been in the log and
// compacted away.
//
// A cluster rebuilt from a backup needs it (`binlogd restore
// -new-cluster`, config base_gtid): its MariaDBs hold every transaction up
// to the backup's GTID and continue after it, while its new Paxos log is
// empty. Recording the base outside the log, in every node's config,
// keeps the log format and Step unchanged: Step is still a pure function
// of the state it starts from, and every node of the cluster must start
// from the same one, so every member (and a node added later, unless it
// installs a peer's snapshot, which carries the state) must have the same
// base. A snapshot restored from a peer or from disk carries its own
// LastGTID and overrides the base.
//
// Call it before the Lease is given to the log, and before Attach.
func (l *Lease) SetBase(g GTID) {
	l.mu.Lock()
	l.base = g
	if l.st.Applied == 0 && l.st.LastBatchIndex == 0 {
		l.st.LastGTID = g
	}
	l.publishLocked()
	l.mu.Unlock()
}

// Base is the GTID set by SetBase (zero when none).
func (l *Lease) Base() GTID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.base
}
