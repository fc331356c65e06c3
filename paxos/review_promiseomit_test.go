package paxos

import (
	"bytes"
	"testing"
)

// reviewValue is the single command's data in value v, or nil.
func reviewValue(v []byte) []byte {
	cmds, err := decodeValue(v)
	if err != nil || len(cmds) != 1 {
		return nil
	}
	return cmds[0].Data
}

// reviewElect campaigns id until it leads (a ballot round it has not seen
// may lose to an equal round of a higher node id: it then retries above
// the round it was refused with).
func reviewElect(t *testing.T, n *reviewNet, id uint32) {
	t.Helper()
	for k := 0; k < 4 && n.cores[id].role != leader; k++ {
		n.cores[id].campaign()
		n.settle()
	}
	if n.cores[id].role != leader {
		t.Fatalf("node %d is %v after campaigning", id, n.cores[id].role)
	}
}

// TestReviewPromiseOmitKeepsHigherBallot (review of ef0654f): a Promise
// leaves out the entries the candidate lists under an equal or higher
// ballot, but never one held under a higher ballot. Leader 1 (b1) gets v
// accepted at i by 1 and 2 only; leader 3 (b3 > b1, its phase 1 among
// 3, 4, 5, which hold nothing at i) gets w accepted at i by itself only.
// Candidate 2 holds (i, b1, v) and lists it; its quorum is 1, 2, 3. Node
// 1 must leave (i, b1, v) out (equal ballot: same value), node 3 must
// report (i, b3, w), and node 2 must re-propose w, the highest ballot's
// value, as full Promises would have made it. Healed, every node hands
// out the same value at every index.
func TestReviewPromiseOmitKeepsHigherBallot(t *testing.T) {
	n := newReviewNet(1, 2, 3, 4, 5)
	reviewElect(t, n, 1)
	in := func(ids ...uint32) map[uint32]bool {
		s := map[uint32]bool{}
		for _, id := range ids {
			s[id] = true
		}
		return s
	}
	only := func(s map[uint32]bool) { n.allow = func(m Message) bool { return s[m.From] && s[m.To] } }

	only(in(1, 2))
	n.cores[1].propose([]byte("v"), 0)
	n.cores[1].flush = true
	n.cores[1].maybePropose()
	n.settle()
	i := n.cores[1].next - 1
	b1 := n.cores[1].ballot
	if e := n.cores[2].log[i]; e == nil || e.ballot != b1 || !bytes.Equal(reviewValue(e.value), []byte("v")) || n.cores[1].chosen >= i {
		t.Fatalf("setup: node 2 at %d holds %+v (want v under %v, unchosen)", i, e, b1)
	}

	only(in(3, 4, 5))
	reviewElect(t, n, 3)
	only(in(3))
	n.cores[3].propose([]byte("w"), 0)
	n.cores[3].flush = true
	n.cores[3].maybePropose()
	n.settle()
	b3 := n.cores[3].ballot
	if e := n.cores[3].log[i]; e == nil || e.ballot != b3 || !bytes.Equal(reviewValue(e.value), []byte("w")) {
		t.Fatalf("setup: node 3 at %d holds %+v (want w under %v)", i, e, b3)
	}

	only(in(1, 2, 3))
	var sent []Message
	allow := n.allow
	n.allow = func(m Message) bool {
		ok := allow(m)
		if ok {
			sent = append(sent, m)
		}
		return ok
	}
	reviewElect(t, n, 2)
	omitted, reported := false, false
	for _, m := range sent {
		if m.Type != MsgPromise || m.To != 2 || m.Probe || m.Reject || m.Ballot != n.cores[2].ballot {
			continue
		}
		for _, e := range m.Entries {
			if e.Index == i && m.From == 1 {
				t.Errorf("node 1 reported (%d, %v) which candidate 2 holds under the same ballot", i, e.Ballot)
			}
			if e.Index == i && m.From == 3 && e.Ballot == b3 {
				reported = true
			}
		}
		if m.From == 1 {
			omitted = true
		}
	}
	if !omitted || !reported {
		t.Fatalf("phase 1 of node 2: Promise from 1 seen %v, (i, b3) from 3 reported %v", omitted, reported)
	}
	if e := n.cores[2].log[i]; e == nil || e.ballot != n.cores[2].ballot || !bytes.Equal(reviewValue(e.value), []byte("w")) {
		t.Fatalf("new leader 2 at %d holds %+v: want w (ballot %v beats %v) re-proposed under its ballot", i, e, b3, b1)
	}

	n.allow = func(Message) bool { return true }
	n.cores[2].propose([]byte("x"), 0)
	n.cores[2].flush = true
	n.cores[2].maybePropose()
	n.settle()
	reviewAgree(t, n, i)
}

// reviewAgree: every node handed out index i, and no two nodes handed out
// different values anywhere.
func reviewAgree(t *testing.T, n *reviewNet, i uint64) {
	t.Helper()
	seen := map[uint64][]byte{}
	for id, vals := range n.committed {
		if _, ok := vals[i]; !ok {
			t.Errorf("node %d did not hand out %d (chosen %d)", id, i, n.cores[id].chosen)
		}
		for j, v := range vals {
			if w, ok := seen[j]; ok && !bytes.Equal(v, w) {
				t.Fatalf("index %d: two values chosen (%q, %q)", j, reviewValue(v), reviewValue(w))
			}
			seen[j] = v
		}
	}
}

// TestReviewPromiseOldCandidate (review of ef0654f): a Prepare without a
// list (an older candidate) gets every accepted entry above its index;
// one that lists an entry under a lower ballot than the acceptor's, or at
// an index the acceptor holds nothing at, changes nothing but that index.
func TestReviewPromiseOldCandidate(t *testing.T) {
	n := newReviewNet(1, 2, 3)
	reviewElect(t, n, 1)
	n.allow = func(m Message) bool { return m.To != 1 || m.Type != MsgAccepted } // nothing chosen
	for _, v := range []string{"a", "b"} {
		n.cores[1].propose([]byte(v), 0)
		n.cores[1].flush = true
		n.cores[1].maybePropose()
		n.settle()
	}
	a := n.cores[2]
	b1 := n.cores[1].ballot
	hi := n.cores[1].next - 1
	if a.chosen >= hi-1 || a.log[hi] == nil || a.log[hi-1] == nil {
		t.Fatalf("setup: node 2 chosen %d, last %d", a.chosen, hi)
	}
	count := func(p Message) map[uint64]bool {
		s := map[uint64]bool{}
		for _, e := range p.Entries {
			s[e.Index] = true
		}
		return s
	}
	full := count(a.promiseFor(b1, a.chosen+1, nil))
	if !full[hi] || !full[hi-1] {
		t.Fatalf("no list: Promise reports %v, want %d and %d", full, hi-1, hi)
	}
	lower := Ballot{Round: b1.Round - 1, Node: 3}
	got := count(a.promiseFor(b1, a.chosen+1, []Entry{{Index: hi, Ballot: lower}, {Index: hi + 5, Ballot: b1}}))
	if !got[hi] || !got[hi-1] {
		t.Fatalf("list under a lower ballot: Promise reports %v, want %d and %d", got, hi-1, hi)
	}
	got = count(a.promiseFor(b1, a.chosen+1, []Entry{{Index: hi, Ballot: b1}}))
	if got[hi] || !got[hi-1] {
		t.Fatalf("list (%d, own ballot): Promise reports %v, want only %d", hi, got, hi-1)
	}
}
