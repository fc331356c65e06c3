package checker

import (
	"fmt"
	"slices"
	"strings"
)

// Cycle anomalies (Adya's, as Elle names them). Each is reported at most
// once per strongly connected component, with the shortest such cycle.
//
//	G0       a cycle of ww edges only (write cycle)
//	G1c      a cycle of ww and wr edges, at least one wr (circular information flow)
//	G2-item  a cycle with at least one rw edge (anti-dependency cycle; with
//	         exactly one it is Elle's G-single, said in the detail)
var cycleKinds = []struct {
	name  string
	allow depKind // edges the cycle may use
	need  depKind // at least one edge must be of this kind
}{
	{"G0", depWW, depWW},
	{"G1c", depWW | depWR, depWR},
	{"G2-item", depWW | depWR | depRW, depRW},
}

// maxCycleSearches bounds the BFS runs per component and kind, so a huge
// invalid component cannot make the checker slow; the first cycles found
// are reported.
const maxCycleSearches = 500

// checkCycles finds the strongly connected components of g and reports
// the cycle anomalies in each.
func checkCycles(res *Result, g *txnGraph) {
	sccs := tarjan(g)
	res.setInfo("graph-txns", len(g.out))
	res.setInfo("graph-edges", g.edges)
	res.setInfo("cyclic-components", len(sccs))
	for _, scc := range sccs {
		in := make(map[int]bool, len(scc))
		for _, n := range scc {
			in[n] = true
		}
		for _, ck := range cycleKinds {
			cyc := shortestCycle(g, in, scc, ck.allow, ck.need)
			if cyc == nil {
				continue
			}
			detail := describeCycle(g, cyc, ck.allow)
			if ck.name == "G2-item" && countKind(g, cyc, depRW, ck.allow) == 1 {
				detail += " (one rw edge: G-single)"
			}
			res.add(Anomaly{Kind: ck.name, Ops: cyc, Detail: detail})
		}
	}
}

// tarjan returns the components with more than one node (self-edges are
// never added), iteratively so a long chain cannot overflow the stack.
func tarjan(g *txnGraph) [][]int {
	index := map[int]int{}
	low := map[int]int{}
	onStack := map[int]bool{}
	var stack []int
	var out [][]int
	next := 0
	type frame struct {
		n    int
		succ []int
		i    int
	}
	all := depWW | depWR | depRW
	for _, root := range g.nodes() {
		if _, seen := index[root]; seen {
			continue
		}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		frames := []frame{{n: root, succ: g.succ(root, all)}}
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			if f.i < len(f.succ) {
				m := f.succ[f.i]
				f.i++
				if _, seen := index[m]; !seen {
					index[m], low[m] = next, next
					next++
					stack = append(stack, m)
					onStack[m] = true
					frames = append(frames, frame{n: m, succ: g.succ(m, all)})
				} else if onStack[m] {
					low[f.n] = min(low[f.n], index[m])
				}
				continue
			}
			n := f.n
			frames = frames[:len(frames)-1]
			if len(frames) > 0 {
				p := frames[len(frames)-1].n
				low[p] = min(low[p], low[n])
			}
			if low[n] == index[n] {
				var comp []int
				for {
					m := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[m] = false
					comp = append(comp, m)
					if m == n {
						break
					}
				}
				if len(comp) > 1 {
					out = append(out, comp)
				}
			}
		}
	}
	return out
}

// shortestCycle returns the shortest cycle inside the component (nodes
// in) using only edges in allow and at least one edge in need, as the
// list of its nodes starting at the need edge's source; nil if none.
func shortestCycle(g *txnGraph, in map[int]bool, scc []int, allow, need depKind) []int {
	var best []int
	searches := 0
	for _, u := range sortedInts(scc) {
		for _, v := range g.succ(u, need&allow) {
			if !in[v] {
				continue
			}
			if searches++; searches > maxCycleSearches {
				return best
			}
			path := bfs(g, in, v, u, allow, len(best))
			if path != nil && (best == nil || len(path) < len(best)) {
				best = append([]int{u}, path[:len(path)-1]...) // u, v, ..., (u)
			}
		}
	}
	return best
}

// bfs returns the shortest path from a to b (both ends included) over
// edges in allow inside the component, or nil; paths of limit nodes or
// more are not wanted (0: no limit).
func bfs(g *txnGraph, in map[int]bool, a, b int, allow depKind, limit int) []int {
	prev := map[int]int{a: a}
	frontier := []int{a}
	for depth := 1; len(frontier) > 0; depth++ {
		if limit > 0 && depth+1 >= limit {
			return nil
		}
		var nextF []int
		for _, n := range frontier {
			for _, m := range g.succ(n, allow) {
				if !in[m] {
					continue
				}
				if _, seen := prev[m]; seen {
					continue
				}
				prev[m] = n
				if m == b {
					path := []int{b}
					for x := b; x != a; {
						x = prev[x]
						path = append([]int{x}, path...)
					}
					return path
				}
				nextF = append(nextF, m)
			}
		}
		frontier = nextF
	}
	if a == b {
		return []int{a}
	}
	return nil
}

func describeCycle(g *txnGraph, cyc []int, allow depKind) string {
	var b strings.Builder
	for i, n := range cyc {
		m := cyc[(i+1)%len(cyc)]
		fmt.Fprintf(&b, "op %d -%s-> ", n, g.out[n][m]&allow)
	}
	fmt.Fprintf(&b, "op %d", cyc[0])
	return b.String()
}

// countKind counts the cycle's edges whose only allowed kind is k (an
// edge that is also ww or wr need not be read as rw).
func countKind(g *txnGraph, cyc []int, k, allow depKind) int {
	c := 0
	for i, n := range cyc {
		if g.out[n][cyc[(i+1)%len(cyc)]]&allow == k {
			c++
		}
	}
	return c
}

func sortedInts(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}
