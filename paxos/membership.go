package paxos

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Membership through the log (see doc.go, "Membership"). A change is a
// command with flagMembership whose data is the whole new member set and
// the index of the change it replaces (a compare-and-swap, so a re-sent
// copy chosen later is void). The core validates every chosen change with
// the same pure function (history.apply) on every node; the state machine
// never sees it.

// Alpha is the activation distance: a change chosen at index i governs the
// instances from i+Alpha on. The leader never has more than min(Window,
// Alpha) instances in flight, so it always knows the members that govern
// the instance it proposes. It is a constant because every node must
// compute the same activation index.
const Alpha = 64

// Member is one member of the cluster.
type Member struct {
	ID   uint32
	Addr string // the member's Paxos gRPC address
	// Info is opaque to the engine, carried with the member through the
	// log (binlogd stores the member's other addresses there).
	Info []byte
	// Learner: the member follows the log (the leader sends it every
	// Accept and chosen index, it fetches what it misses) but never votes:
	// quorums count voters only, it never campaigns, and its promises and
	// votes are ignored. PromoteLearner and DemoteVoter flip it.
	Learner bool
}

// Membership is one configuration of the cluster.
type Membership struct {
	// Index is where the change was chosen (0 for the initial members).
	Index uint64
	// Active is the first instance this configuration governs (Index+Alpha,
	// 1 for the initial members).
	Active  uint64
	Members []Member // sorted by ID
}

// Has reports whether id is a member (voter or learner).
func (m *Membership) Has(id uint32) bool { return m.find(id) >= 0 }

// IsVoter reports whether id is a member that votes (not a learner).
func (m *Membership) IsVoter(id uint32) bool {
	k := m.find(id)
	return k >= 0 && !m.Members[k].Learner
}

// IsLearner reports whether id is a learner.
func (m *Membership) IsLearner(id uint32) bool {
	k := m.find(id)
	return k >= 0 && m.Members[k].Learner
}

// Voters returns how many members vote: a quorum is Voters()/2+1 of them.
func (m *Membership) Voters() int {
	n := 0
	for _, x := range m.Members {
		if !x.Learner {
			n++
		}
	}
	return n
}

func (m *Membership) find(id uint32) int {
	for i := range m.Members {
		if m.Members[i].ID == id {
			return i
		}
	}
	return -1
}

// IDs returns the member ids in order.
func (m *Membership) IDs() []uint32 {
	ids := make([]uint32, len(m.Members))
	for i, x := range m.Members {
		ids[i] = x.ID
	}
	return ids
}

// learners returns the learners' ids in order.
func (m *Membership) learners() []uint32 {
	var ids []uint32
	for _, x := range m.Members {
		if x.Learner {
			ids = append(ids, x.ID)
		}
	}
	return ids
}

// Errors of membership changes.
var (
	// ErrMembershipPending: an earlier change is not active yet (one change
	// at a time). Known failed; retry once it is active.
	ErrMembershipPending = errors.New("paxos: a membership change is still pending")
	// ErrMembershipConflict: another change was chosen first. Known failed.
	ErrMembershipConflict = errors.New("paxos: membership changed concurrently")
	// ErrBadMembership: the change is not one add or one remove of a valid
	// member (the message says why). Known failed.
	ErrBadMembership = errors.New("paxos: bad membership change")
	// ErrNotVoter: Campaign on a node that is no voter (a learner, or
	// removed): it can never lead.
	ErrNotVoter = errors.New("paxos: this node does not vote (a learner or not a member) and never leads")
	// ErrOddLog: Campaign on a node whose log the majority of the nodes'
	// digests named the odd one (Status.OddRanges, core_odd.go).
	ErrOddLog = errors.New("paxos: this node's log is the odd one (the majority's digests disagree with it): it never leads until its directory is replaced")
)

// membershipChange is the data of a flagMembership command.
//
//	uvarint(prev) members
//	members = uvarint(n) { uvarint(id | learner<<32) uvarint(len) addr uvarint(len) info }*
//
// The learner flag rides in bit 32 of the id's uvarint, so a log or a
// history written before learners existed decodes unchanged. A binary
// that predates learners rejects a member with the bit set (id above
// 2^32-1): every node must run a learner-aware build before the first
// learner is added.
type membershipChange struct {
	Prev    uint64 // Index of the configuration it replaces
	Members []Member
}

func appendMembers(b []byte, ms []Member) []byte {
	b = binary.AppendUvarint(b, uint64(len(ms)))
	for _, m := range ms {
		id := uint64(m.ID)
		if m.Learner {
			id |= learnerBit
		}
		b = binary.AppendUvarint(b, id)
		b = binary.AppendUvarint(b, uint64(len(m.Addr)))
		b = append(b, m.Addr...)
		b = binary.AppendUvarint(b, uint64(len(m.Info)))
		b = append(b, m.Info...)
	}
	return b
}

func decodeMembers(b []byte) ([]Member, []byte, error) {
	n, b, err := uvarint(b, "members")
	if err != nil {
		return nil, nil, err
	}
	if n > 64 {
		return nil, nil, fmt.Errorf("%w: %d members, at most 64", ErrBadValue, n)
	}
	ms := make([]Member, 0, n)
	for ; n > 0; n-- {
		var id, l uint64
		var m Member
		if id, b, err = uvarint(b, "member id"); err != nil {
			return nil, nil, err
		}
		m.Learner = id&learnerBit != 0
		id &^= learnerBit
		if id == 0 || id > 1<<32-1 {
			return nil, nil, fmt.Errorf("%w: member id %d", ErrBadValue, id)
		}
		m.ID = uint32(id)
		if l, b, err = uvarint(b, "addr length"); err != nil {
			return nil, nil, err
		}
		if l > uint64(len(b)) {
			return nil, nil, fmt.Errorf("%w: truncated member address", ErrBadValue)
		}
		m.Addr, b = string(b[:l]), b[l:]
		if l, b, err = uvarint(b, "info length"); err != nil {
			return nil, nil, err
		}
		if l > uint64(len(b)) {
			return nil, nil, fmt.Errorf("%w: truncated member info", ErrBadValue)
		}
		if l > 0 {
			m.Info = append([]byte(nil), b[:l]...)
		}
		b = b[l:]
		ms = append(ms, m)
	}
	return ms, b, nil
}

// learnerBit marks a learner in a member's encoded id (see membershipChange).
const learnerBit = 1 << 32

func encodeChange(ch membershipChange) []byte {
	b := binary.AppendUvarint(nil, ch.Prev)
	return appendMembers(b, ch.Members)
}

func decodeChange(b []byte) (membershipChange, error) {
	var ch membershipChange
	var err error
	if ch.Prev, b, err = uvarint(b, "prev"); err != nil {
		return ch, err
	}
	if ch.Members, b, err = decodeMembers(b); err != nil {
		return ch, err
	}
	if len(b) != 0 {
		return ch, fmt.Errorf("%w: %d trailing bytes after a membership change", ErrBadValue, len(b))
	}
	return ch, nil
}

// history is every configuration since the initial one, ascending by
// Index (and so by Active: one change at a time).
//
// Invariant: items[k+1].Index >= items[k].Active (a change is valid only
// once the previous one is active), hence at most one activation point
// lies in any Alpha consecutive instances.
type history struct {
	items []Membership
}

func genesis(ms []Member) *history {
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(a, b Member) int { return int(int64(a.ID) - int64(b.ID)) })
	return &history{items: []Membership{{Index: 0, Active: 1, Members: ms}}}
}

func (h *history) latest() *Membership { return &h.items[len(h.items)-1] }

// at returns the configuration that governs instance j: the last one
// active at j. Only authoritative for j <= applied+Alpha (every change that
// could activate by then is chosen and recorded, hence known).
func (h *history) at(j uint64) *Membership {
	for k := len(h.items) - 1; k > 0; k-- {
		if h.items[k].Active <= j {
			return &h.items[k]
		}
	}
	return &h.items[0]
}

// from returns the configurations that govern some instance >= j.
func (h *history) from(j uint64) []*Membership {
	out := []*Membership{h.at(j)}
	for k := range h.items {
		if h.items[k].Active > j {
			out = append(out, &h.items[k])
		}
	}
	return out
}

// check validates a change proposed (or chosen) at index against the
// history: the pure rule every node applies to a chosen change.
func (h *history) check(index uint64, ch membershipChange) error {
	cur := h.latest()
	if ch.Prev != cur.Index {
		return fmt.Errorf("%w: proposed against the members of index %d, but the members of index %d are current", ErrMembershipConflict, ch.Prev, cur.Index)
	}
	if cur.Active > index {
		return fmt.Errorf("%w: the change chosen at %d becomes active at %d", ErrMembershipPending, cur.Index, cur.Active)
	}
	return diffOne(cur.Members, ch.Members)
}

// diffOne checks that next is cur with exactly one member added,
// removed, promoted (learner to voter) or demoted (voter to learner),
// everyone else unchanged: so the voters change by at most one, which is
// what keeps the old and new majorities intersecting (doc.go). At least
// one voter must remain.
func diffOne(cur, next []Member) error {
	if len(next) == 0 {
		return fmt.Errorf("%w: no members left", ErrBadMembership)
	}
	voters := 0
	for _, m := range next {
		if !m.Learner {
			voters++
		}
	}
	if voters == 0 {
		return fmt.Errorf("%w: no voters left (learners alone cannot choose anything)", ErrBadMembership)
	}
	if len(next) > 64 {
		return fmt.Errorf("%w: %d members, at most 64", ErrBadMembership, len(next))
	}
	seen := map[uint32]bool{}
	for _, m := range next {
		if m.ID == 0 || m.Addr == "" || seen[m.ID] {
			return fmt.Errorf("%w: member %d: id must be nonzero and unique, address nonempty", ErrBadMembership, m.ID)
		}
		seen[m.ID] = true
	}
	old := map[uint32]Member{}
	for _, m := range cur {
		old[m.ID] = m
	}
	added, removed, flipped := 0, 0, 0
	for _, m := range next {
		o, ok := old[m.ID]
		if !ok {
			added++
		} else if o.Addr != m.Addr || !bytes.Equal(o.Info, m.Info) {
			return fmt.Errorf("%w: member %d changed its address; remove and re-add it", ErrBadMembership, m.ID)
		} else if o.Learner != m.Learner {
			flipped++
		}
	}
	for id := range old {
		if !seen[id] {
			removed++
		}
	}
	if added+removed+flipped != 1 {
		return fmt.Errorf("%w: %d added, %d removed and %d promoted or demoted; change one member at a time", ErrBadMembership, added, removed, flipped)
	}
	return nil
}

// apply records the change chosen at index if it is valid, and reports
// whether it was. Idempotent: a change already recorded is not repeated.
func (h *history) apply(index uint64, ch membershipChange) bool {
	for _, it := range h.items {
		if it.Index == index && index != 0 {
			return true
		}
	}
	if h.check(index, ch) != nil {
		return false
	}
	ms := slices.Clone(ch.Members)
	slices.SortFunc(ms, func(a, b Member) int { return int(int64(a.ID) - int64(b.ID)) })
	h.items = append(h.items, Membership{Index: index, Active: index + Alpha, Members: ms})
	return true
}

// encode is the persisted and transferred form ("meta"):
//
//	"PXM1" uvarint(n) { uvarint(index) uvarint(active) members }*
func (h *history) encode() []byte {
	b := []byte("PXM1")
	b = binary.AppendUvarint(b, uint64(len(h.items)))
	for _, it := range h.items {
		b = binary.AppendUvarint(b, it.Index)
		b = binary.AppendUvarint(b, it.Active)
		b = appendMembers(b, it.Members)
	}
	return b
}

func decodeHistory(b []byte) (*history, error) {
	if len(b) < 4 || string(b[:4]) != "PXM1" {
		return nil, fmt.Errorf("%w: membership history lacks its header", ErrBadValue)
	}
	b = b[4:]
	n, b, err := uvarint(b, "history length")
	if err != nil {
		return nil, err
	}
	if n == 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: membership history of %d items", ErrBadValue, n)
	}
	h := &history{}
	for ; n > 0; n-- {
		var it Membership
		if it.Index, b, err = uvarint(b, "index"); err != nil {
			return nil, err
		}
		if it.Active, b, err = uvarint(b, "active"); err != nil {
			return nil, err
		}
		if it.Members, b, err = decodeMembers(b); err != nil {
			return nil, err
		}
		if k := len(h.items); k > 0 && it.Index < h.items[k-1].Active {
			return nil, fmt.Errorf("%w: membership history out of order at index %d", ErrBadValue, it.Index)
		}
		h.items = append(h.items, it)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after the membership history", ErrBadValue, len(b))
	}
	return h, nil
}

// merge adopts the items of o (a peer's history, every item of which was
// chosen) that h lacks. It fails if the two disagree (another cluster).
func (h *history) merge(o *history) (changed bool, err error) {
	for k, it := range o.items {
		if k < len(h.items) {
			if h.items[k].Index != it.Index || !slices.Equal(h.items[k].IDs(), it.IDs()) || !slices.Equal(h.items[k].learners(), it.learners()) {
				return false, fmt.Errorf("%w: membership history differs at item %d (index %d vs %d): another cluster?", ErrBadValue, k, h.items[k].Index, it.Index)
			}
			continue
		}
		h.items = append(h.items, it)
		changed = true
	}
	return changed, nil
}

func (h *history) clone() *history {
	return &history{items: slices.Clone(h.items)}
}
