package checker

import (
	"fmt"
	"sort"

	"phxgo/jepsen/history"
)

// ReplicaRead is the Note of an append-workload read that went through
// the read/write-split port as one autocommit SELECT, so a replica may
// have served it: it may be stale, but must still be a snapshot of a
// committed prefix of the log (see Append).
const ReplicaRead = "rwsplit-read"

// appendInfo is what the checker knows about one appended element.
type appendInfo struct {
	op       int // history index
	outcome  history.Outcome
	invoke   int64
	complete int64
	final    int64 // the txn's last element appended to this key (G1b)
}

type listRead struct {
	op               int
	invoke, complete int64
	list             []int64
	replica          bool // ReplicaRead: staleness allowed
}

// Append checks an Elle-shaped list-append history (history.FTxn ops of
// append and read micro-ops; each element is appended once per key).
//
// Per key it reports: "duplicate-append" (an element twice in one read),
// "garbage" (an element never appended to that key), "aborted-read" (an
// element whose transaction failed), "incompatible-order" (two reads that
// are not prefixes of one another: reordered or forked lists),
// "lost-append" (an acknowledged append missing from a read that began
// after it completed), "stale-read" (a read shorter than one that
// completed before it began), "realtime-order" (an element placed before
// one whose append completed before its own began) and "internal" (a read
// inside a transaction that does not end with that transaction's own
// earlier appends), and, as Elle does, "G1a" (an element whose
// transaction failed is visible: aborted read) and "G1b" (a read ends
// with an element its transaction later appended past: intermediate
// read).
//
// Across keys it builds the transaction dependency graph (txngraph.go)
// from every key whose reads agree on one order: ww from consecutive
// elements of the longest read, wr from the writer of a read's last
// element to the reader, rw from a reader to the writer of the element
// right after what it read; then reports cycles (cycles.go): G0, G1c,
// G2-item. No cycle means the ok transactions are serializable; the
// per-key real-time checks above add the strict part (a read sees every
// append acknowledged before it began).
//
// Reads marked ReplicaRead (the read/write-split port) are exempt from
// the real-time checks as readers (lost-append, stale-read): that port
// promises no recency. Everything else holds for them: no garbage,
// aborted, duplicated or reordered elements, and they take part in the
// cycle search, so a replica's multi-key read must be a consistent
// snapshot of a committed prefix (serializable). Their staleness is
// counted in Info ("replica-reads", "replica-stale-reads").
func Append(h []history.Op) Result {
	res := Result{Checker: "append", Valid: Valid}
	appends := map[int64]map[int64]appendInfo{} // key -> element -> info
	reads := map[int64][]listRead{}
	okTxns := 0
	for _, op := range clientOps(h) {
		if op.F != history.FTxn {
			continue
		}
		if op.Outcome == history.OK {
			okTxns++
		}
		own := map[int64][]int64{}
		for _, m := range op.Txn {
			switch m.F {
			case history.MAppend:
				if appends[m.Key] == nil {
					appends[m.Key] = map[int64]appendInfo{}
				}
				appends[m.Key][m.Value] = appendInfo{op: op.Index, outcome: op.Outcome, invoke: op.Invoke, complete: op.Complete}
				own[m.Key] = append(own[m.Key], m.Value)
			case history.MRead:
				if op.Outcome != history.OK {
					continue
				}
				if mine := own[m.Key]; len(mine) > 0 && !hasSuffix(m.List, mine) {
					res.add(Anomaly{Kind: "internal", Key: m.Key, Ops: []int{op.Index},
						Detail: fmt.Sprintf("read %v does not end with the txn's own appends %v", m.List, mine)})
				}
				reads[m.Key] = append(reads[m.Key], listRead{op: op.Index, invoke: op.Invoke, complete: op.Complete,
					list: m.List, replica: op.Note == ReplicaRead})
			default:
				res.Valid = Unknown
				res.setInfo("error", fmt.Sprintf("op %d: %v: micro-op %q", op.Index, ErrUnknownOp, m.F))
				return res
			}
		}
		for k, vs := range own {
			for _, v := range vs {
				a := appends[k][v]
				a.final = vs[len(vs)-1]
				appends[k][v] = a
			}
		}
	}
	keys := make([]int64, 0, len(reads))
	for k := range reads {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var g txnGraph
	for _, k := range keys {
		if order, ok := checkAppendKey(&res, k, appends[k], reads[k]); ok {
			addKeyDeps(&g, &res, k, order, appends[k], reads[k])
		}
	}
	checkCycles(&res, &g)
	replicaReads, replicaStale := 0, 0
	for _, k := range keys {
		for _, r := range reads[k] {
			if r.replica {
				replicaReads++
				if staleBy(r, reads[k]) {
					replicaStale++
				}
			}
		}
	}
	res.setInfo("replica-reads", replicaReads)
	res.setInfo("replica-stale-reads", replicaStale)
	res.setInfo("ok-txns", okTxns)
	res.setInfo("keys-read", len(keys))
	return res
}

// checkAppendKey runs the per-key checks; it returns the key's version
// order (the longest read) and whether every read is a prefix of it.
func checkAppendKey(res *Result, k int64, apps map[int64]appendInfo, rs []listRead) ([]int64, bool) {
	// Per-read element checks.
	for _, r := range rs {
		seen := map[int64]bool{}
		for _, v := range r.list {
			if seen[v] {
				res.add(Anomaly{Kind: "duplicate-append", Key: k, Ops: []int{r.op},
					Detail: fmt.Sprintf("element %d twice in %v", v, r.list)})
			}
			seen[v] = true
			a, ok := apps[v]
			switch {
			case !ok:
				res.add(Anomaly{Kind: "garbage", Key: k, Ops: []int{r.op},
					Detail: fmt.Sprintf("element %d was never appended to key %d", v, k)})
			case a.outcome == history.Fail:
				res.add(Anomaly{Kind: "G1a", Key: k, Ops: []int{a.op, r.op},
					Detail: fmt.Sprintf("element %d is visible though its txn failed (aborted read)", v)})
			}
		}
	}
	// Order: every read is a prefix of the longest.
	longest := rs[0]
	for _, r := range rs[1:] {
		if len(r.list) > len(longest.list) {
			longest = r
		}
	}
	compatible := true
	for _, r := range rs {
		if !isPrefix(r.list, longest.list) {
			compatible = false
			res.add(Anomaly{Kind: "incompatible-order", Key: k, Ops: []int{r.op, longest.op},
				Detail: fmt.Sprintf("%v is not a prefix of %v", r.list, longest.list)})
		}
	}
	// Lost appends and stale reads, in real time (not promised by the
	// read/write-split port: a replica's read is never judged by them).
	for _, r := range rs {
		if r.replica {
			continue
		}
		in := map[int64]bool{}
		for _, v := range r.list {
			in[v] = true
		}
		for v, a := range apps {
			if a.outcome == history.OK && a.complete < r.invoke && !in[v] {
				res.add(Anomaly{Kind: "lost-append", Key: k, Ops: []int{a.op, r.op},
					Detail: fmt.Sprintf("element %d acknowledged before the read began, missing from %v", v, r.list)})
			}
		}
		if !compatible {
			continue
		}
		for _, earlier := range rs {
			if !earlier.replica && earlier.complete < r.invoke && len(earlier.list) > len(r.list) {
				res.add(Anomaly{Kind: "stale-read", Key: k, Ops: []int{earlier.op, r.op},
					Detail: fmt.Sprintf("%v read after %v had completed", r.list, earlier.list)})
			}
		}
	}
	// Real-time order of appends along each distinct read.
	for _, r := range rs {
		if compatible && r.op != longest.op {
			continue // prefixes of the longest add nothing
		}
		var maxInvoke int64 = -1
		var maxOp int
		var maxV int64
		for _, v := range r.list {
			a, ok := apps[v]
			if !ok {
				continue
			}
			if a.outcome == history.OK && a.complete < maxInvoke {
				res.add(Anomaly{Kind: "realtime-order", Key: k, Ops: []int{maxOp, a.op, r.op},
					Detail: fmt.Sprintf("element %d placed before %d, whose append completed before %d's began", maxV, v, maxV)})
			}
			if a.invoke > maxInvoke {
				maxInvoke, maxOp, maxV = a.invoke, a.op, v
			}
		}
	}
	return longest.list, compatible
}

// staleBy reports whether r missed an element that some ok, non-replica
// read had already returned before r began (a replica's lag, allowed on
// the read/write-split port and counted).
func staleBy(r listRead, rs []listRead) bool {
	for _, e := range rs {
		if !e.replica && e.complete < r.invoke && len(e.list) > len(r.list) {
			return true
		}
	}
	return false
}

func isPrefix(p, l []int64) bool {
	if len(p) > len(l) {
		return false
	}
	for i := range p {
		if p[i] != l[i] {
			return false
		}
	}
	return true
}

func hasSuffix(l, s []int64) bool {
	if len(s) > len(l) {
		return false
	}
	off := len(l) - len(s)
	for i := range s {
		if l[off+i] != s[i] {
			return false
		}
	}
	return true
}
