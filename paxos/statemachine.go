package paxos

// StateMachine is applied in log order on every node. Apply must be a pure,
// deterministic function of the state and the command: no clock, no I/O,
// no randomness, so every node computes the same state and results.
//
// Several commands can share one log index (the engine batches concurrent
// proposals into one Paxos value); they are applied in the order they sit
// in the value. A Noop (hole fill or Barrier) is never passed to Apply.
type StateMachine interface {
	// Apply applies one command chosen at index and returns its result,
	// which is handed back to the Propose call that proposed it (on the
	// proposing node only).
	Apply(index uint64, cmd []byte) any
	// Snapshot returns the whole state as of the last Apply. The engine
	// persists it together with the applied index so that every command is
	// applied exactly once across restarts.
	Snapshot() ([]byte, error)
	// Restore replaces the state with a snapshot taken after applied.
	// It is called at start, before any Apply (snap is nil on a new log),
	// and again whenever this node lagged behind a peer's compacted log
	// and installs that peer's snapshot (snapshot_install.go): then
	// applied jumps forward and Apply continues from applied+1.
	Restore(applied uint64, snap []byte) error
}
