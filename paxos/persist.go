package paxos

import (
	"fmt"

	"phxgo/wal"
)

// Persistence pipeline. The persister merges every Ready waiting for it
// into one wal.Update and submits it with SaveAsync, without waiting; the
// completer takes the submitted saves in order and, for each,
//
//  1. applies the committed entries whose accepts earlier saves made
//     durable (all earlier saves are complete: the completer is in order),
//  2. waits for this save,
//  3. applies the rest, sends the messages, and lets the core compact.
//
// So several saves can sync at once (the wal overlaps them, see wal's
// doc.go), while every Ready's messages still leave only after its Update
// and every earlier one is durable, as Ready requires: a save is answered
// only after every earlier one, and the completer handles them in order.

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
	install  *InstalledSnapshot // made durable before done was submitted
	done     []<-chan error     // the save's parts, in order; none: nothing to save
	before   []Entry            // committed, durable before this save
	after    [][]Entry          // committed, durable with this save
	messages [][]Message
	last     uint64 // last committed index, 0 if none
}

// saveAsync submits u, in several parts if the storage cannot take it in
// one: the merge of many Readys can outgrow a wal transaction under large
// commands, and a refused save would stop the node. Losing atomicity is
// safe: nothing in u is acted on (answered, sent) before every part is
// durable, and a crash between parts leaves accepts never answered.
func (n *Node) saveAsync(u wal.Update) []<-chan error {
	parts := []wal.Update{u}
	if s, ok := n.storage.(splittingStorage); ok {
		parts = s.Split(u)
	}
	chs := make([]<-chan error, 0, len(parts))
	for _, p := range parts {
		if a, ok := n.storage.(asyncStorage); ok {
			chs = append(chs, a.SaveAsync(p))
			continue
		}
		ch := make(chan error, 1)
		ch <- n.storage.Save(p)
		chs = append(chs, ch)
	}
	return chs
}

// wait waits for every part of the job's save and returns the first error.
func (j *saveJob) wait() error {
	var first error
	for _, ch := range j.done {
		if err := <-ch; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// persister merges Readys into saves and submits them.
func (n *Node) persister() {
	defer close(n.completeQ)
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
		// The membership history first: it only records chosen changes,
		// so it may be durable early, never late (before their apply).
		var meta []byte
		for i := range batch {
			if batch[i].Meta != nil {
				meta = batch[i].Meta
			}
		}
		if meta != nil && !n.failed.Load() {
			if err := n.meta.SaveMeta(meta); err != nil {
				n.fail(fmt.Errorf("%w: save membership: %w", ErrStorage, err))
				continue
			}
		}
		// A Ready that installs a snapshot starts a save of its own, so
		// the install lands after every earlier save and before its own.
		for len(batch) > 0 && !n.failed.Load() {
			k := 1
			for k < len(batch) && batch[k].Install == nil {
				k++
			}
			if in := batch[0].Install; in != nil {
				if err := n.storage.InstallSnapshot(in.Index, in.Data); err != nil {
					n.fail(fmt.Errorf("%w: install snapshot at %d: %w", ErrStorage, in.Index, err))
					break
				}
			}
			n.completeQ <- n.submitSave(batch[:k])
			batch = batch[k:]
		}
	}
}

func (n *Node) submitSave(batch []Ready) *saveJob {
	u := wal.Update{NoSync: true}
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
	if need || u.Chosen > 0 {
		job.done = n.saveAsync(u)
	}
	return job
}

// completer finishes saves in order: apply, wait, apply, send.
func (n *Node) completer() {
	defer func() {
		close(n.applyQ)
		n.tr.close()
	}()
	for job := range n.completeQ {
		if n.failed.Load() {
			job.wait()
			continue
		}
		if job.install != nil {
			n.applyQ <- applyItem{install: job.install}
		}
		if len(job.before) > 0 {
			n.applyQ <- applyItem{entries: job.before}
		}
		if err := job.wait(); err != nil {
			n.fail(fmt.Errorf("%w: save: %w", ErrStorage, err))
			continue
		}
		for _, es := range job.after {
			n.applyQ <- applyItem{entries: es}
		}
		for _, ms := range job.messages {
			n.tr.send(ms)
		}
		if job.last > 0 {
			n.stable.Store(job.last)
			select {
			case n.stableNote <- struct{}{}:
			default:
			}
		}
	}
}
