package rolectl

// Event is an input to Step: an observation, a request, or the result of
// an earlier action.
type Event interface{ isEvent() }

// Observed: the driver's newest view of the lease and MariaDB.
type Observed struct{ Obs Obs }

// Repoint: time to re-assert a replica's replication (RepointInterval).
type Repoint struct{ Obs Obs }

// PromoteFailed: MakeDurable, OpenWrites or StartCapture for Epoch
// failed; Unsafe when the server's settings cannot be trusted.
type PromoteFailed struct {
	Epoch  uint64
	Why    string
	Unsafe bool
}

// CaptureStopped: capture for Epoch returned on its own (not stopped by
// StopCapture); Unsafe when it found the server unsafe.
type CaptureStopped struct {
	Epoch  uint64
	Why    string
	Unsafe bool
}

// StepDown: stop serving now (switchover, storage failure).
type StepDown struct{ Why string }

// Waiting: the answer to CountWaiting. Known is false when the count could
// not be read (no connection, an error): then commits may be waiting.
type Waiting struct {
	Purpose Purpose
	N       int
	Known   bool
}

// Quiet: the answer to CheckQuiet. Proven only when every check ran and
// passed; Why says which did not.
type Quiet struct {
	Purpose Purpose
	Proven  bool
	Why     string
}

// Released: the answer to Release: semi-sync master is off (OK), or the
// server could not be proven quiet (Why) and semi-sync stayed on.
type Released struct {
	OK  bool
	Why string
}

// SwitchoverAborted: a switchover made this master read-only to quiesce
// it (binlogd/node/admin.go) and then gave up before it proposed the new
// lease (commits still waiting, the target behind). Obs is observed under
// the driver's lock, like Observed: writes reopen only through the
// controller, on this observation, never by the admin call itself.
type SwitchoverAborted struct{ Obs Obs }

// Shutdown: the node stops. Handoff asks to leave MariaDB running for the
// next binlogd (a restart); it is granted only to a replica (a master
// hands over first, by switchover, and is a replica by then; one that
// could not still fences and stops MariaDB).
type Shutdown struct{ Handoff bool }

func (Observed) isEvent()          {}
func (Repoint) isEvent()           {}
func (PromoteFailed) isEvent()     {}
func (CaptureStopped) isEvent()    {}
func (StepDown) isEvent()          {}
func (Waiting) isEvent()           {}
func (Shutdown) isEvent()          {}
func (Quiet) isEvent()             {}
func (Released) isEvent()          {}
func (SwitchoverAborted) isEvent() {}

// Step is the role controller: the next state and the actions the driver
// carries out, in order. It does no I/O and reads no clock.
//
// Invariants (checked by the table test and the simulation):
//   - OpenWrites is emitted only after MakeDurable in the same batch, and
//     only when the newest observation says this node holds a valid,
//     ready lease for the epoch it serves, MariaDB is up and not unsafe,
//     and (in a promotion) caught up; a SwitchoverAborted reopens only a
//     master of that same epoch.
//   - An observation that the lease is gone, changed epoch, or that the
//     node is unsafe makes a master emit SetReadOnly before anything else.
//   - GracefulStop and Handoff are emitted only for a count of zero
//     waiting commits; an unknown count or any waiting commit means Kill.
//   - Handoff is emitted only when the node stopped as a replica: a
//     MariaDB that was writable in this Stopped phase is never left
//     running.
//   - While Armed (the server served writes since it last started),
//     KeepReplica, GracefulStop and Handoff are never emitted before a
//     Quiet{Proven} or Released{OK}; a Quiet or Released that proved
//     nothing means Kill. Semi-sync goes off only by Release.
func Step(s State, ev Event) (State, []Action) {
	if s.Phase == Stopped {
		if r, ok := ev.(Released); ok {
			if !r.OK {
				return kill(s, "stopping, semi-sync not released: "+r.Why)
			}
			s.Armed = false
			if s.Handoff {
				return s, []Action{{Kind: Handoff}}
			}
			return s, []Action{{Kind: GracefulStop}}
		}
		if q, ok := ev.(Quiet); ok {
			if q.Proven && q.Purpose == ForShutdown {
				return s, []Action{{Kind: GracefulStop}}
			}
			if !q.Proven {
				return kill(s, "stopping a server that served writes, not provably quiet: "+q.Why)
			}
			return s, nil
		}
		if w, ok := ev.(Waiting); ok && w.Purpose == ForShutdown {
			if w.Known && w.N == 0 && !s.Armed { // armed: only a Quiet proves it
				if s.Handoff {
					return s, []Action{{Kind: Handoff}}
				}
				return s, []Action{{Kind: GracefulStop}}
			}
			return s, []Action{{Kind: Kill, Why: "stopping with commits waiting for an ACK (or unknown)"}}
		}
		if w, ok := ev.(Waiting); ok && w.Purpose == ForDemote && (!w.Known || w.N > 0) {
			return s, []Action{{Kind: Kill, Why: "stepped down with commits waiting for an ACK"}}
		}
		return s, nil
	}
	switch ev := ev.(type) {
	case Observed:
		s.Obs = ev.Obs
		return observe(s)
	case Repoint:
		s.Obs = ev.Obs
		o := s.Obs
		if s.Phase == Replica && o.MySQLUp && !o.LeaseMaster && !o.Stopping {
			if s.Armed {
				return s, []Action{{Kind: Release}}
			}
			return s, []Action{{Kind: KeepReplica}}
		}
		return s, nil
	case Released:
		if s.Phase != Replica {
			return s, nil
		}
		if !ev.OK {
			return kill(s, "semi-sync not released, server not provably quiet: "+ev.Why)
		}
		s.Armed = false
		return s, []Action{{Kind: KeepReplica}}
	case Quiet:
		if !ev.Proven {
			return kill(s, "stepped down, server not provably quiet: "+ev.Why)
		}
		return s, nil
	case PromoteFailed:
		if s.Phase != Master || ev.Epoch != s.Epoch {
			return s, nil
		}
		return endTerm(s, "becoming master failed: "+ev.Why, ev.Unsafe)
	case CaptureStopped:
		if s.Phase != Master || ev.Epoch != s.Epoch {
			return s, nil
		}
		return endTerm(s, "capture stopped: "+ev.Why, ev.Unsafe)
	case StepDown:
		if s.Phase != Master {
			return s, nil
		}
		return demote(s)
	case Waiting:
		if ev.Purpose == ForDemote && (!ev.Known || ev.N > 0) {
			return s, []Action{{Kind: Kill, Why: "stepped down with commits waiting for an ACK"}}
		}
		return s, nil
	case Shutdown:
		return shutdown(s, ev.Handoff)
	case SwitchoverAborted:
		s.Obs = ev.Obs
		return resume(s)
	}
	return s, nil
}

// resume reopens writes on a master a switchover quiesced and then gave
// up on: the promotion's own path (MakeDurable, then OpenWrites), and only
// while the observation still says this node holds a valid, ready lease
// for the epoch it serves, MariaDB is up and the node is neither unsafe
// nor stopping. It does not ask for CaughtUp: the master is the source of
// its term, its MariaDB is at or ahead of the log, never behind it. A
// master that may not resume is demoted at once rather than left a
// read-only master: the next observation would demote it anyway (lease
// gone, unsafe), or its capture would (MariaDB down). Anything but a
// master (demoted meanwhile, stopped) stays as it is: its read_only is
// the controller's and stays on.
func resume(s State) (State, []Action) {
	if s.Phase != Master {
		return s, nil
	}
	o := s.Obs
	if !o.LeaseMaster || o.LeaseEpoch != s.Epoch || o.Unsafe || !o.MySQLUp || o.Stopping {
		return demote(s)
	}
	return s, []Action{{Kind: MakeDurable}, {Kind: OpenWrites, Epoch: s.Epoch}}
}

func observe(s State) (State, []Action) {
	o := s.Obs
	switch s.Phase {
	case Master:
		if !o.LeaseMaster || o.LeaseEpoch != s.Epoch || o.Unsafe {
			return demote(s)
		}
	case Replica:
		if !o.LeaseMaster || o.Unsafe || !o.MySQLUp || o.Stopping {
			return s, nil
		}
		if !o.CaughtUp {
			// The lease says ready but MariaDB is not at the log's end:
			// give the term up rather than serve from behind.
			return s, []Action{{Kind: Fence, Epoch: o.LeaseEpoch, Why: "MariaDB behind the log at promotion"}}
		}
		s.Phase, s.Epoch, s.ServedWrites, s.Armed = Master, o.LeaseEpoch, true, true
		return s, []Action{
			{Kind: LeadPaxos},
			{Kind: MakeDurable},
			{Kind: OpenWrites, Epoch: s.Epoch},
			{Kind: StartCapture, Epoch: s.Epoch},
		}
	}
	return s, nil
}

// demote stops serving at once: read_only first, then capture, then the
// server is proven quiet (or killed, see Quiet). Semi-sync stays on until
// a Release at the next Repoint checks again.
func demote(s State) (State, []Action) {
	s.Phase, s.Epoch = Replica, 0
	return s, []Action{
		{Kind: SetReadOnly},
		{Kind: StopCapture},
		{Kind: CheckQuiet, Purpose: ForDemote},
	}
}

// kill stops MariaDB without letting anything commit; a supervised server
// restarts (after recovery cut what the log lacks) with semi-sync off.
func kill(s State, why string) (State, []Action) {
	if s.Supervise {
		s.Armed = false
	}
	return s, []Action{{Kind: Kill, Why: why}}
}

// endTerm demotes and ends the term in the log, so the lease cannot make
// this node master again before it has looked at why it failed.
func endTerm(s State, why string, unsafe bool) (State, []Action) {
	epoch := s.Epoch
	s, acts := demote(s)
	var out []Action
	if unsafe {
		out = append(out, Action{Kind: MarkUnsafe, Why: why})
	}
	out = append(out, acts[:2]...)
	out = append(out, Action{Kind: Fence, Epoch: epoch, Why: why})
	out = append(out, acts[2:]...)
	if unsafe {
		s.Obs.Unsafe = true
	}
	return s, out
}

func shutdown(s State, handoff bool) (State, []Action) {
	s.Handoff = handoff && s.Phase == Replica && s.Supervise
	var out []Action
	if s.Phase == Master {
		// Refuse new writes, let waiting commits be acknowledged for a
		// moment, end the term, then stop capture.
		out = append(out,
			Action{Kind: SetReadOnly},
			Action{Kind: AwaitDrained},
			Action{Kind: Fence, Epoch: s.Epoch, Why: "shutdown"},
			Action{Kind: StopCapture},
		)
	}
	switch {
	case s.Handoff && s.Armed:
		// A handed-off MariaDB is a replica with semi-sync off: a
		// demoted master not yet released is released (or killed) first.
		out = append(out, Action{Kind: Release})
	case s.Supervise && s.Armed:
		out = append(out, Action{Kind: CheckQuiet, Purpose: ForShutdown})
	case s.Supervise:
		out = append(out, Action{Kind: CountWaiting, Purpose: ForShutdown})
	case s.Armed:
		out = append(out, Action{Kind: CheckQuiet, Purpose: ForDemote})
	}
	s.Phase, s.Epoch, s.Obs.Stopping = Stopped, 0, true
	return s, out
}
