package checker

import (
	"fmt"
	"slices"

	"phxgo/jepsen/history"
)

// Dependency kinds between transactions (Adya), as a bit set: two
// transactions may depend on each other in several ways at once.
type depKind uint8

const (
	depWW depKind = 1 << iota // T1 appended an element right before T2's in a key's order
	depWR                     // T2 read a list whose last element T1 appended
	depRW                     // T1 read a list that T2's element (the next one) extends
)

func (k depKind) String() string {
	s := ""
	for _, x := range []struct {
		k    depKind
		name string
	}{{depWW, "ww"}, {depWR, "wr"}, {depRW, "rw"}} {
		if k&x.k != 0 {
			if s != "" {
				s += "+"
			}
			s += x.name
		}
	}
	return s
}

// txnGraph is the dependency graph of the committed (ok) and possibly
// committed (info, once something of theirs was read) transactions.
// Nodes are history indexes.
type txnGraph struct {
	out   map[int]map[int]depKind
	edges int
}

func (g *txnGraph) add(from, to int, k depKind) {
	if from == to {
		return
	}
	if g.out == nil {
		g.out = map[int]map[int]depKind{}
	}
	m := g.out[from]
	if m == nil {
		m = map[int]depKind{}
		g.out[from] = m
	}
	if m[to]&k == 0 {
		g.edges++
	}
	m[to] |= k
	if g.out[to] == nil {
		g.out[to] = map[int]depKind{}
	}
}

// nodes returns the graph's nodes in ascending order (determinism).
func (g *txnGraph) nodes() []int {
	ns := make([]int, 0, len(g.out))
	for n := range g.out {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// succ returns n's successors over edges with a kind in mask, ascending.
func (g *txnGraph) succ(n int, mask depKind) []int {
	var out []int
	for m, k := range g.out[n] {
		if k&mask != 0 {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// addKeyDeps adds the edges one key contributes, given its version order
// (the longest read, of which every read is a prefix: the caller checked),
// who appended each element, and every ok read of the key. lastAppend
// maps (txn, key) to the txn's final element on the key, for G1b.
func addKeyDeps(g *txnGraph, res *Result, k int64, order []int64, apps map[int64]appendInfo, rs []listRead) {
	writer := func(v int64) (int, bool) {
		a, ok := apps[v]
		if !ok || a.outcome == history.Fail {
			return 0, false // garbage or aborted: reported per key, no edges
		}
		return a.op, true
	}
	// ww: consecutive elements of the order.
	for i := 1; i < len(order); i++ {
		w1, ok1 := writer(order[i-1])
		w2, ok2 := writer(order[i])
		if ok1 && ok2 {
			g.add(w1, w2, depWW)
		}
	}
	for _, r := range rs {
		// The part of the list others wrote: the reader's own earlier
		// appends end it (checked as "internal").
		ext := r.list
		for len(ext) > 0 {
			if w, ok := writer(ext[len(ext)-1]); !ok || w != r.op {
				break
			}
			ext = ext[:len(ext)-1]
		}
		if len(ext) > 0 {
			last := ext[len(ext)-1]
			if w, ok := writer(last); ok {
				g.add(w, r.op, depWR)
				if final := apps[last].final; final != last {
					res.add(Anomaly{Kind: "G1b", Key: k, Ops: []int{w, r.op},
						Detail: fmt.Sprintf("read %v ends with %d, an intermediate append of op %d (its last on key %d is %d)", r.list, last, w, k, final)})
				}
			}
		}
		if len(ext) < len(order) {
			if w, ok := writer(order[len(ext)]); ok && w != r.op {
				g.add(r.op, w, depRW)
			}
		}
	}
}
