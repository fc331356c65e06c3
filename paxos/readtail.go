package paxos

import "sync"

// readTail keeps the most recently applied entries' commands in memory, so
// a reader that follows the log closely (binlogd's replication endpoint,
// one cursor per replica) gets them without reading each entry back from
// storage and decoding it again. It is bounded by the bytes of the values
// it holds; a reader behind its first entry reads storage (ReadNext).
//
// The applier goroutine adds every applied entry in order; readers take
// a read lock. Entries share their value bytes with the applier (Command
// Data aliases them), which is safe because neither side modifies them.
//
// Invariant: ents[head:] hold consecutive indexes, and bytes is the sum of
// their sizes.
type readTail struct {
	max int // bound on bytes; 0 disables the tail

	mu    sync.RWMutex
	ents  []tailEntry
	head  int // ents[:head] were evicted
	bytes int
}

type tailEntry struct {
	index uint64
	cmds  []Command // the entry's non-internal commands (may be none)
	size  int       // the encoded value's length
}

func newReadTail(maxBytes int) *readTail { return &readTail{max: maxBytes} }

// add appends the entry at index, applied just now. A gap (a snapshot was
// installed, or the tail is new after a restart) starts the tail afresh.
func (t *readTail) add(index uint64, cmds []command, size int) {
	if t.max <= 0 {
		return
	}
	var out []Command
	for _, c := range cmds {
		if !c.internal() {
			out = append(out, Command{Index: index, Data: c.Data})
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.ents); n > t.head && t.ents[n-1].index+1 != index {
		t.resetLocked()
	}
	t.ents = append(t.ents, tailEntry{index: index, cmds: out, size: size})
	t.bytes += size
	// Keep at least the newest entry, however large: the closest readers
	// want exactly that one.
	for t.bytes > t.max && len(t.ents)-t.head > 1 {
		t.bytes -= t.ents[t.head].size
		t.ents[t.head] = tailEntry{}
		t.head++
	}
	if t.head > 1024 && t.head > len(t.ents)/2 {
		t.ents = append(t.ents[:0], t.ents[t.head:]...)
		t.head = 0
	}
}

// reset empties the tail (a snapshot install moved the applied index).
func (t *readTail) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resetLocked()
}

func (t *readTail) resetLocked() {
	clear(t.ents)
	t.ents, t.head, t.bytes = t.ents[:0], 0, 0
}

// read returns the commands of the entries from..upto, stopping once about
// maxBytes of values were passed (at least one entry), and the index to
// read next. ok is false when the tail does not hold from: read storage.
func (t *readTail) read(from, upto uint64, maxBytes int) (cmds []Command, next uint64, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if len(t.ents) == t.head {
		return nil, from, false
	}
	first := t.ents[t.head].index
	last := t.ents[len(t.ents)-1].index
	if from < first || from > last {
		return nil, from, false
	}
	upto = min(upto, last)
	size := 0
	next = from
	for i := t.head + int(from-first); next <= upto && (next == from || size < maxBytes); i++ {
		e := &t.ents[i]
		cmds = append(cmds, e.cmds...)
		size += e.size
		next = e.index + 1
	}
	return cmds, next, true
}
