package paxos

import (
	"fmt"

	"phxgo/wal"
)

// Persistence pipeline: the one code that turns Readys into durable
// saves and orders everything that depends on them. Node runs it on two
// goroutines; the simulation (sim_test.go) and the core tests run the
// same two stages inline, so what they check is what production does.
//
// Stage 1, persistBatch (Node's persister): merges every Ready waiting
// into one wal.Update and submits it without waiting (pipeEnv.submit:
// wal.Log's SaveAsync), so several saves can sync at once (the wal
// overlaps them, see wal's doc.go). Stage 2, completeSave (Node's
// completer), takes the submitted saves in order and, for each,
//
//  1. applies the committed entries whose accepts earlier saves made
//     durable (all earlier saves are complete: the completer is in order),
//  2. waits for this save,
//  3. applies the rest, sends the messages, and lets the core drop what
//     storage now holds (rawNode.Advance).
//
// Invariant (persist before send): a Ready's Messages leave only after
// its Update and every earlier Ready's Update are durable, and an entry
// is applied only once the save that holds its accept is durable. It
// holds because a save is answered only after every earlier one, the
// completer handles them in order, and completeSave sends and applies
// "after" entries only once wait returned nil. Early messages are the
// driver's (they claim nothing durable, see Ready) and never come here.
// TestPipelinePersistsBeforeSend checks it on a storage that holds saves
// back.

// maxSavesInFlight bounds the saves submitted and not yet completed.
const maxSavesInFlight = 8

// asyncStorage is a Storage that queues saves (wal.Log): results arrive
// in submission order.
type asyncStorage interface {
	SaveAsync(wal.Update) <-chan error
}

// splittingStorage is a Storage whose Save has a size limit (wal.Log:
// one Badger transaction); Split divides an update into parts that each
// fit, to be saved in order.
type splittingStorage interface {
	Split(wal.Update) []wal.Update
}

// saveJob is one merged save and what depends on it.
type saveJob struct {
	install  *InstalledSnapshot // made durable before save was submitted
	save     pendingSave        // nil: nothing to save
	before   []Entry            // committed, durable before this save
	after    [][]Entry          // committed, durable with this save
	messages [][]Message
	last     uint64 // last committed index, 0 if none
	// saved: the indexes whose accepts save holds (nil: none), for
	// applyAhead.
	saved map[uint64]struct{}
}

// pendingSave is a submitted save; wait returns once it is durable (or
// failed).
type pendingSave interface{ wait() error }

// pipeEnv is what the pipeline acts on: the storage, the applier, the
// transport and the core's Advance. Node's is nodePipe; the simulation
// has its own over its simulated disk and network.
type pipeEnv interface {
	failed() bool // stop submitting (the node failed or crashed)
	// saveMeta saves the membership history durably and reports whether
	// the save submitted next must carry the wal's membership marker
	// (wal.Update.MarkMembership; markedMeta).
	saveMeta(b []byte) (mark bool, err error)
	installSnapshot(in *InstalledSnapshot) error
	submit(u wal.Update) pendingSave
	apply(it applyItem) // hand to the applier, in order
	send(ms []Message)
	advance(last uint64) // committed entries up to last are applied and durable
}

// persistBatch is stage 1 for a batch of consecutive Readys: it saves
// their membership history, then submits their merged saves, handing
// each job to out in order. An error is a storage failure: the node must
// stop.
func persistBatch(env pipeEnv, batch []Ready, out func(*saveJob)) error {
	// The membership history first: it only records chosen changes,
	// so it may be durable early, never late (before their apply).
	var meta []byte
	for i := range batch {
		if batch[i].Meta != nil {
			meta = batch[i].Meta
		}
	}
	// mark: the wal's membership marker rides the first save below,
	// submitted after the history is durable (file first, then marker:
	// markedMeta).
	mark := false
	if meta != nil && !env.failed() {
		var err error
		if mark, err = env.saveMeta(meta); err != nil {
			return fmt.Errorf("%w: save membership: %w", ErrStorage, err)
		}
	}
	// A Ready that installs a snapshot starts a save of its own, so
	// the install lands after every earlier save and before its own.
	for len(batch) > 0 && !env.failed() {
		k := 1
		for k < len(batch) && batch[k].Install == nil {
			k++
		}
		if in := batch[0].Install; in != nil {
			if err := env.installSnapshot(in); err != nil {
				return fmt.Errorf("%w: install snapshot at %d: %w", ErrStorage, in.Index, err)
			}
		}
		out(planSave(env, batch[:k], mark))
		mark = false
		batch = batch[k:]
	}
	return nil
}

// planSave merges batch (no Install but on the first) into one save,
// submits it, and sorts what depends on it. mark: the save carries the
// wal's membership marker, and is submitted even if it holds nothing
// else (then without a sync of its own: the next synced save makes it
// durable, and until then the marker is only asked for again).
func planSave(env pipeEnv, batch []Ready, mark bool) *saveJob {
	u := wal.Update{NoSync: true, MarkMembership: mark}
	need := false
	job := &saveJob{install: batch[0].Install}
	for i := range batch {
		r := &batch[i]
		if r.needsSync() {
			u.NoSync = false
		}
		if r.Update.Promised != nil {
			u.Promised = r.Update.Promised
		}
		u.Accepted = append(u.Accepted, r.Update.Accepted...)
		u.Chosen = max(u.Chosen, r.Update.Chosen)
		need = need || r.needsPersist()
		if k := len(r.Committed); k > 0 {
			job.last = r.Committed[k-1].Index
		}
		if len(r.Messages) > 0 {
			job.messages = append(job.messages, r.Messages)
		}
	}
	// Committed entries up to the first whose accept is in this save are
	// durable already; the rest wait for it.
	var inBatch map[uint64]struct{}
	if need {
		inBatch = make(map[uint64]struct{}, len(u.Accepted))
		for _, a := range u.Accepted {
			inBatch[a.Index] = struct{}{}
		}
	}
	for i := range batch {
		es := batch[i].Committed
		if len(job.after) == 0 {
			k := 0
			for k < len(es) {
				if _, ok := inBatch[es[k].Index]; ok {
					break
				}
				k++
			}
			job.before = append(job.before, es[:k]...)
			es = es[k:]
		}
		if len(es) > 0 {
			job.after = append(job.after, es)
		}
	}
	if need || u.Chosen > 0 || mark {
		job.save = env.submit(u)
	}
	job.saved = inBatch
	return job
}

// applyAhead applies, while head's save is still syncing, the committed
// entries of the jobs queued behind it (ahead, in order) that are durable
// already: their accepts are in no save still pending (head's or an
// earlier one of ahead). It stops at the first entry that must wait, at
// an install, and behind any entry that waits (head's after), so entries
// are still applied in index order. Why: a leader proposes a value every
// linger while busy, so when a vote makes a value chosen, a later
// value's save is usually still syncing, and in completion order the
// chosen value waited for it too (about a fsync more per commit).
// Messages and advance still wait for their own save and every earlier one.
func applyAhead(env pipeEnv, head *saveJob, ahead []*saveJob) {
	if len(head.after) > 0 || head.install != nil {
		return
	}
	pending := []map[uint64]struct{}{head.saved}
	for _, j := range ahead {
		if j.install != nil {
			return
		}
		if len(j.before) > 0 {
			for _, e := range j.before {
				for _, p := range pending {
					if _, ok := p[e.Index]; ok {
						return
					}
				}
			}
			env.apply(applyItem{entries: j.before})
			j.before = nil
		}
		if len(j.after) > 0 {
			return
		}
		if j.saved != nil {
			pending = append(pending, j.saved)
		}
	}
}

// wait waits for the job's save, if any.
func (j *saveJob) wait() error {
	if j.save == nil {
		return nil
	}
	return j.save.wait()
}

// startSave applies what job installs and the entries durable before its
// save (completeSave's first step), and drops them from job.
func startSave(env pipeEnv, job *saveJob) {
	if job.install != nil {
		env.apply(applyItem{install: job.install})
		job.install = nil
	}
	if len(job.before) > 0 {
		env.apply(applyItem{entries: job.before})
		job.before = nil
	}
}

// completeSave is stage 2 for one job, called in submission order: apply
// what was durable already, wait, apply the rest, send, advance. An
// error is a storage failure: nothing after the failed save may be sent
// or applied, and the node must stop.
func completeSave(env pipeEnv, job *saveJob) error {
	startSave(env, job)
	if err := job.wait(); err != nil {
		return fmt.Errorf("%w: save: %w", ErrStorage, err)
	}
	for _, es := range job.after {
		env.apply(applyItem{entries: es})
	}
	for _, ms := range job.messages {
		env.send(ms)
	}
	if job.last > 0 {
		env.advance(job.last)
	}
	return nil
}

// partSaves is the outcome of a save submitted in parts, in order.
type partSaves []<-chan error

// wait waits for every part and returns the first error.
func (p partSaves) wait() error {
	var first error
	for _, ch := range p {
		if err := <-ch; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// submitParts submits u to st, in several parts if st cannot take it in
// one: the merge of many Readys can outgrow a wal transaction under large
// commands, and a refused save would stop the node. Losing atomicity is
// safe: nothing in u is acted on (answered, sent) before every part is
// durable, and a crash between parts leaves accepts never answered.
func submitParts(st Storage, u wal.Update) partSaves {
	parts := []wal.Update{u}
	if s, ok := st.(splittingStorage); ok {
		parts = s.Split(u)
	}
	chs := make(partSaves, 0, len(parts))
	for _, p := range parts {
		if a, ok := st.(asyncStorage); ok {
			chs = append(chs, a.SaveAsync(p))
			continue
		}
		ch := make(chan error, 1)
		ch <- st.Save(p)
		chs = append(chs, ch)
	}
	return chs
}

// nodePipe is Node's pipeEnv.
type nodePipe struct{ n *Node }

func (p nodePipe) failed() bool                    { return p.n.failed.Load() }
func (p nodePipe) submit(u wal.Update) pendingSave { return submitParts(p.n.storage, u) }
func (p nodePipe) apply(it applyItem)              { p.n.applyQ <- it }
func (p nodePipe) send(ms []Message)               { p.n.tr.send(ms) }
func (p nodePipe) installSnapshot(in *InstalledSnapshot) error {
	return p.n.storage.InstallSnapshot(in.Index, in.Data)
}

func (p nodePipe) saveMeta(b []byte) (bool, error) {
	if err := p.n.meta.SaveMeta(b); err != nil {
		return false, err
	}
	m, ok := p.n.meta.(markedMeta)
	return ok && m.needsMark(b), nil
}

// advance hands the durable index to the run loop, which owns the core.
func (p nodePipe) advance(last uint64) {
	p.n.stable.Store(last)
	select {
	case p.n.stableNote <- struct{}{}:
	default:
	}
}

// persister is stage 1 on its own goroutine: it merges every Ready
// waiting for it into one batch.
func (n *Node) persister() {
	defer close(n.completeQ)
	env := nodePipe{n}
	for rd := range n.persistQ {
		batch := []Ready{rd}
	more:
		for len(batch) < 256 {
			select {
			case r, ok := <-n.persistQ:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		if err := persistBatch(env, batch, func(j *saveJob) { n.completeQ <- j }); err != nil {
			n.fail(err)
		}
	}
}

// completer is stage 2 on its own goroutine. While a job's save syncs it
// takes the jobs queued behind it and applies what they commit that is
// durable already (applyAhead).
func (n *Node) completer() {
	defer func() {
		close(n.applyQ)
		n.tr.close()
	}()
	env := nodePipe{n}
	var ahead []*saveJob
	open := true
	for {
		var job *saveJob
		if len(ahead) > 0 {
			job, ahead = ahead[0], ahead[1:]
		} else if j, ok := <-n.completeQ; ok {
			job = j
		} else {
			return
		}
		if n.failed.Load() {
			job.wait()
			continue
		}
		if open {
			job, ahead, open = n.awaitAhead(env, job, ahead)
		}
		if err := completeSave(env, job); err != nil {
			n.fail(err)
		}
	}
}

// awaitAhead runs the start of completeSave for job (its install and the
// entries durable before its save), then, until its save is durable,
// queues the jobs that arrive behind it and applies what they commit
// that is durable already. It returns job with its save's outcome in
// place, so completeSave finishes it, the jobs queued, and whether
// completeQ is still open.
func (n *Node) awaitAhead(env pipeEnv, job *saveJob, ahead []*saveJob) (*saveJob, []*saveJob, bool) {
	ps, ok := job.save.(partSaves)
	if !ok || len(ps) == 0 {
		return job, ahead, true
	}
	startSave(env, job)
	last := ps[len(ps)-1]
	applyAhead(env, job, ahead)
	for {
		// At most maxSavesInFlight queued here too: together with
		// completeQ's capacity that bounds the saves in flight.
		q := n.completeQ
		if len(ahead) >= maxSavesInFlight {
			q = nil
		}
		select {
		case err := <-last:
			job.save = doneSave{ps[:len(ps)-1], err}
			return job, ahead, true
		case j, ok := <-q:
			if !ok {
				return job, ahead, false
			}
			ahead = append(ahead, j)
			applyAhead(env, job, ahead)
		}
	}
}

// doneSave is a partSaves whose last part was answered already (err).
type doneSave struct {
	rest partSaves
	err  error
}

func (d doneSave) wait() error {
	if err := d.rest.wait(); err != nil {
		return err
	}
	return d.err
}
