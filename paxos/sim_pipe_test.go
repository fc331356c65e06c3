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
func (p simPipe) saveMeta(b []byte) (bool, error) { p.n.meta = b; return false, nil }

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
// save still in flight. crash makes the node crash there instead.
type simSave struct {
	p     simPipe
	u     wal.Update
	crash bool
}

func (v *simSave) wait() error {
	if v.crash {
		v.p.s.crash(v.p.n)
		return errSimCrash
	}
	return submitParts(v.p.n.st, v.u).wait()
}

// armCrash sometimes makes a job without a promise or a vote crash its
// node after applying its entries and before saving its chosen index
// (if it has one) and sending: a restart then finds applied entries
// above the chosen index it saved.
func (s *sim) armCrash(env simPipe, j *saveJob) {
	sv, _ := j.save.(*simSave)
	if sv != nil && (sv.u.Promised != nil || len(sv.u.Accepted) > 0) {
		return
	}
	if !s.faulty || !s.o.crashes || s.rng.Intn(50) != 0 {
		return
	}
	if sv == nil {
		sv = &simSave{p: env}
		j.save = sv
	}
	sv.crash = true
}
