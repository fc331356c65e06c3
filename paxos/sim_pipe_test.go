package paxos

import (
	"errors"

	"phxgo/wal"
)

// simPipe is the simulation's pipeEnv: the production pipeline
// (persist.go) over a node's simulated disk, applier and network.
type simPipe struct {
	s *sim
	n *simNode
}

// errSimCrash: the node crashed while the pipeline waited for a save.
var errSimCrash = errors.New("sim: node crashed")

func (p simPipe) failed() bool { return !p.n.up }

// saveMeta: n.meta survives crashes, like the driver's membership file.
func (p simPipe) saveMeta(b []byte) error { p.n.meta = b; return nil }

func (p simPipe) installSnapshot(in *InstalledSnapshot) error {
	return p.n.st.InstallSnapshot(in.Index, in.Data)
}

func (p simPipe) submit(u wal.Update) pendingSave { return &simSave{p: p, u: u} }

func (p simPipe) apply(it applyItem) {
	if it.install != nil {
		p.s.install(p.n, it.install)
		return
	}
	p.s.apply(p.n, it.entries)
}

func (p simPipe) send(ms []Message) {
	for _, m := range ms {
		p.s.sendMsg(m)
	}
}

func (p simPipe) advance(last uint64) { p.n.rn.Advance(last) }

// simSave is a submitted save that reaches storage only when the
// completer waits for it: the latest a wal may make it durable, so what
// the pipeline applies or sends before the wait is checked against a
// save still in flight. A crash may strike just before a save that only
// raises the chosen index (its entries were applied already).
type simSave struct {
	p simPipe
	u wal.Update
}

func (v *simSave) wait() error {
	s, n := v.p.s, v.p.n
	if v.u.Promised == nil && len(v.u.Accepted) == 0 && s.faulty && s.o.crashes && s.rng.Intn(50) == 0 {
		s.crash(n)
		return errSimCrash
	}
	return submitParts(n.st, v.u).wait()
}
