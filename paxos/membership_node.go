package paxos

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"phxgo/wal"
)

// Driver side of membership: the public API, persistence of the history,
// and the transport following the members.

// Membership returns the latest configuration this node knows and
// whether it is still pending (not yet active at this node's chosen
// index). Before a joining node has learned the members it returns the
// zero Membership.
func (n *Node) Membership() (m Membership, pending bool) {
	h := n.members.Load()
	if h == nil {
		return Membership{}, false
	}
	m = *h.latest()
	return m, m.Active > n.chosenAt.Load()+1
}

// Removed reports whether node id was a member and was removed: some
// configuration this node knows had it, and neither the one in force at
// this node's chosen index nor the latest has (a removal still pending,
// or one undone by a later add, is not). binlogd refuses such a node's
// certificate: nothing revokes it otherwise.
func (n *Node) Removed(id uint32) bool {
	h := n.members.Load()
	if h == nil || h.latest().Has(id) || h.at(n.chosenAt.Load()+1).Has(id) {
		return false
	}
	for i := range h.items {
		if h.items[i].Has(id) {
			return true
		}
	}
	return false
}

// AddMember adds one node through the log and returns once the change is
// active (chosen, and Alpha instances later: the leader fills them with
// Noops). The new node should be started with Config.Join and the current
// members as Peers; it learns the members and catches up from the log.
//
// Errors: ErrMembershipPending, ErrMembershipConflict, ErrBadMembership
// (known failed); otherwise as for Propose.
func (n *Node) AddMember(ctx context.Context, m Member) (Membership, error) {
	cur, _ := n.Membership()
	if cur.Has(m.ID) {
		return cur, fmt.Errorf("%w: node %d is already a member", ErrBadMembership, m.ID)
	}
	next := append(slices.Clone(cur.Members), m)
	return n.changeMembership(ctx, cur, next)
}

// RemoveMember removes one node through the log; it returns once the
// change is active. From then on the removed node votes in no instance
// the new members govern, and never campaigns. Errors as for AddMember.
func (n *Node) RemoveMember(ctx context.Context, id uint32) (Membership, error) {
	cur, _ := n.Membership()
	k := cur.find(id)
	if k < 0 {
		return cur, fmt.Errorf("%w: node %d is not a member", ErrBadMembership, id)
	}
	next := slices.Delete(slices.Clone(cur.Members), k, k+1)
	return n.changeMembership(ctx, cur, next)
}

// PromoteLearner makes learner id a voter through the log (one change);
// it returns once the change is active. The engine does not check that
// the learner has caught up: the caller does (binlogd: members.go), since
// a lagging voter is safe but a poor one (it votes at once, while it
// fetches what it lacks). Errors as for AddMember; ErrBadMembership if id
// is not a learner.
func (n *Node) PromoteLearner(ctx context.Context, id uint32) (Membership, error) {
	return n.flipLearner(ctx, id, false)
}

// DemoteVoter makes voter id a learner through the log (one change); it
// returns once active. A leader demoted steps down once the change is
// active, like a removed one. ErrBadMembership if id is not a voter or is
// the last one.
func (n *Node) DemoteVoter(ctx context.Context, id uint32) (Membership, error) {
	return n.flipLearner(ctx, id, true)
}

func (n *Node) flipLearner(ctx context.Context, id uint32, learner bool) (Membership, error) {
	cur, _ := n.Membership()
	k := cur.find(id)
	switch {
	case k < 0:
		return cur, fmt.Errorf("%w: node %d is not a member", ErrBadMembership, id)
	case learner && cur.Members[k].Learner:
		return cur, fmt.Errorf("%w: node %d is already a learner", ErrBadMembership, id)
	case !learner && !cur.Members[k].Learner:
		return cur, fmt.Errorf("%w: node %d is not a learner", ErrBadMembership, id)
	}
	next := slices.Clone(cur.Members)
	next[k].Learner = learner
	return n.changeMembership(ctx, cur, next)
}

func (n *Node) changeMembership(ctx context.Context, cur Membership, next []Member) (Membership, error) {
	if cur.Members == nil {
		return cur, fmt.Errorf("%w: this node does not know the members yet", ErrMembershipPending)
	}
	ch := membershipChange{Prev: cur.Index, Members: next}
	// The rule a chosen change must pass, checked here first for a clear
	// error; the log decides.
	h := n.members.Load()
	if err := h.check(n.chosenAt.Load()+1, ch); err != nil {
		return cur, err
	}
	r := n.submit(ctx, encodeChange(ch), flagMembership)
	if r.err != nil {
		return cur, r.err
	}
	// The core recorded the change (or refused it) before handing the
	// entry to the applier, so the published history answers.
	h = n.members.Load()
	for _, it := range h.items {
		if it.Index == r.index {
			// Active once every instance before it.Active is chosen (as
			// Membership's pending says); the leader's Noops fill exactly
			// those (flushChange), so on an idle cluster nothing is ever
			// proposed at it.Active itself to wait for.
			if err := n.WaitApplied(ctx, it.Active-1); err != nil {
				return it, err
			}
			return it, nil
		}
	}
	latest := *h.latest()
	if err := h.check(r.index, ch); err != nil {
		return latest, err
	}
	return latest, fmt.Errorf("%w: the change chosen at %d was refused", ErrMembershipConflict, r.index)
}

// metaSnapshot returns the engine's own state that a log snapshot must
// carry (the membership history), for snapshot install. Safe from any
// goroutine; nil while a joining node knows no members yet.
func (n *Node) metaSnapshot() []byte {
	if h := n.members.Load(); h != nil {
		return h.encode()
	}
	return nil
}

// restoreMeta merges a snapshot's membership history (from metaSnapshot
// on a peer) into this node's and persists it. Call it from any
// goroutine but the run loop (it waits for the run loop); from inside the
// run loop, use rawNode.AdoptMeta.
func (n *Node) restoreMeta(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := decodeHistory(b); err != nil {
		return err
	}
	r := metaReq{meta: b, done: make(chan error, 1)}
	select {
	case n.metac <- r:
	case <-n.stopc:
		return ErrStopped
	}
	select {
	case err := <-r.done:
		return err
	case <-n.donec:
		return ErrStopped
	}
}

type metaReq struct {
	meta []byte
	done chan error
}

// followMembers publishes the core's history and points the transport at
// the nodes the core talks to (run loop).
func (n *Node) followMembers(v *memberView) {
	if v.hist == nil {
		n.tr.setPeers(n.cfg.Peers)
		return
	}
	h := v.hist
	n.members.Store(h)
	addrs := map[uint32]string{}
	for _, it := range h.items {
		for _, m := range it.Members {
			addrs[m.ID] = m.Addr
		}
	}
	peers := map[uint32]string{}
	for _, id := range v.targets {
		peers[id] = addrs[id]
	}
	n.tr.setPeers(peers)
}

// metaStore persists the membership history.
type metaStore interface {
	LoadMeta() ([]byte, error) // nil, nil when none was saved
	SaveMeta([]byte) error     // atomic and durable
}

// openMeta picks where the history lives: in the Storage if it can hold
// it (MemoryStorage), else in a file in dir, else (a custom Storage and no
// Dir) in memory only. A file is guarded by the Storage's membership
// marker when it has one (*wal.Log): see markedMeta; fallback is the
// history the node starts from without one (nil for a joining node).
func openMeta(st Storage, dir string, fallback []byte) metaStore {
	if m, ok := st.(metaStore); ok {
		return m
	}
	if dir != "" {
		f := fileMeta{path: filepath.Join(dir, metaFileName)}
		if ml, ok := st.(markingStorage); ok {
			return markedMeta{file: f, st: ml, fallback: fallback}
		}
		return f
	}
	return &memMeta{}
}

const metaFileName = "paxos-membership"

// markingStorage is a Storage that can record, in its own durable state,
// that a membership history was saved (*wal.Log: Update.MarkMembership,
// MembershipSaved), so losing the history file does not lose the record
// of it.
type markingStorage interface {
	Storage
	MembershipSaved() bool
}

var _ markingStorage = (*wal.Log)(nil) // the production Storage marks

// markedMeta is fileMeta guarded by the storage's marker. Without it, a
// node whose history file was lost started as if no membership change had
// ever happened and counted majorities of its configured members (audit:
// a safety problem, not merely a stale view).
//
// The marker says that a history was saved that the node could not
// rebuild from its config: anything but fallback, the genesis of its
// configured members (config members only seed a cluster: README). Every
// node that is not joining saves that genesis at its first start; losing
// it loses nothing (the node rebuilds the same history), so it is not
// marked and such a node still starts without the file. A joining node
// has no fallback: any history it saves is marked.
//
// The file first, then the marker: a crash in between leaves a file
// without a marker, which LoadMeta reads as a file from before the marker
// existed and marks; the reverse order could leave a marker without a
// file and refuse a healthy node. SaveMeta writes only the file (durable
// on return); the marker rides the wal save the persister submits next
// (persistBatch: needsMark, then wal.Update.MarkMembership), so a
// membership change costs the persister no write or sync beyond the
// file's. Why not a write of its own: two versions that marked with a
// Badger write and sync at the change delayed the saves behind it on a
// slow disk until a leader stepped down (e2e TestLearner; wal's
// membership.go).
type markedMeta struct {
	file     fileMeta
	st       markingStorage
	fallback []byte
}

// needsMark: losing history b would lose something, and the storage
// does not record yet that it was saved. (A marker still riding an
// unsynced save is asked for again; the wal writes it once.)
func (m markedMeta) needsMark(b []byte) bool {
	return b != nil && !bytes.Equal(b, m.fallback) && !m.st.MembershipSaved()
}

// LoadMeta reads the file at start: missing while the storage records a
// saved history, it is an error naming it; present and unmarked (written
// by an earlier version, or a crash between the file and the marker), it
// is marked now, with a synced save of its own (nothing else waits at
// start).
func (m markedMeta) LoadMeta() ([]byte, error) {
	b, err := m.file.LoadMeta()
	switch {
	case err != nil:
		return nil, err
	case b == nil && m.st.MembershipSaved():
		return nil, errMetaMissing(m.file.path)
	case m.needsMark(b):
		if err := m.st.Save(wal.Update{MarkMembership: true}); err != nil {
			return nil, fmt.Errorf("record that membership %s exists: %w", m.file.path, err)
		}
	}
	return b, nil
}

// SaveMeta writes the file; the caller marks (needsMark).
func (m markedMeta) SaveMeta(b []byte) error { return m.file.SaveMeta(b) }

// errMetaMissing: the wal says a history was saved, and its file is gone.
func errMetaMissing(path string) error {
	return fmt.Errorf("membership file %s is missing, but this node's Paxos log records that it saved one its config cannot rebuild (its cluster changed its members): "+
		"the node cannot trust its list of voters (its configured members may be stale); restore the file, or reseed the node: binlogd wal-repair prints how", path)
}

// fileMeta keeps the history in one file, replaced atomically (write a
// temporary file, fsync, rename, fsync the directory), followed by
// metaSumMagic and a CRC-32C of the history: the file names the voters
// whose majorities this node counts, so a flipped byte that still
// decodes (another address, another id) must not pass (audit, December
// 2026: 8 flipped bytes went unnoticed). A file without the trailer, as
// earlier versions wrote it, is still read; the next save adds it.
type fileMeta struct{ path string }

const metaSumMagic = "PXMC"

var metaCRC = crc32.MakeTable(crc32.Castagnoli)

func (f fileMeta) LoadMeta() ([]byte, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read membership %s: %w", f.path, err)
	}
	if n := len(b) - len(metaSumMagic) - 4; n >= 0 && string(b[n:n+len(metaSumMagic)]) == metaSumMagic {
		body, sum := b[:n], binary.BigEndian.Uint32(b[n+len(metaSumMagic):])
		if got := crc32.Checksum(body, metaCRC); got != sum {
			return nil, fmt.Errorf("%w: membership file %s is damaged (checksum %08x, stored %08x): the node cannot trust its list of voters; binlogd wal-repair prints how to reseed it", ErrBadValue, f.path, got, sum)
		}
		b = body
	}
	if _, err := decodeHistory(b); err != nil {
		return nil, fmt.Errorf("membership file %s: %w", f.path, err)
	}
	return b, nil
}

// CheckMembershipFile reads the membership history a node keeps in dir
// (its Config.Dir) the way the node does at start: nil when it is
// absent (a node that never saved one) or whole, else an error naming
// the file. It cannot tell a file that was never written from a lost
// one: CheckMembership can.
func CheckMembershipFile(dir string) error {
	return CheckMembership(dir, false)
}

// CheckMembership is CheckMembershipFile for a node whose wal says
// whether it saved a membership history (saved: wal.Report's or
// (*wal.Log)'s MembershipSaved): as at start, a missing file is then an
// error naming it too (binlogd wal-repair's report). It writes nothing.
func CheckMembership(dir string, saved bool) error {
	f := fileMeta{path: filepath.Join(dir, metaFileName)}
	b, err := f.LoadMeta()
	if err == nil && b == nil && saved {
		err = errMetaMissing(f.path)
	}
	return err
}

func (f fileMeta) SaveMeta(b []byte) error {
	b = binary.BigEndian.AppendUint32(append(slices.Clip(b), metaSumMagic...), crc32.Checksum(b, metaCRC))
	tmp := f.path + ".tmp"
	fh, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := fh.Write(b); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(f.path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

type memMeta struct {
	mu sync.Mutex
	b  []byte
}

func (m *memMeta) LoadMeta() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.b, nil
}

func (m *memMeta) SaveMeta(b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.b = slices.Clone(b)
	return nil
}

// LoadMeta implements the engine's membership persistence: the history
// survives a simulated crash like the rest of the MemoryStorage.
func (s *MemoryStorage) LoadMeta() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta, nil
}

// SaveMeta: see LoadMeta.
func (s *MemoryStorage) SaveMeta(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meta = slices.Clone(b)
	return nil
}
