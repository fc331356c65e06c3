package main

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	pb "phxgo/proto"
)

// Log digests in `binlogd status` and `binlogd cluster status`: each node
// reports its newest finished log range digests and the divergences it
// saw itself (a peer's digest of a range differing from its own;
// paxos/digest.go). The cluster status also compares the members' own
// digests with each other (what each says of itself, whatever they saw
// of each other: a member may not have heard a peer's yet), and names the
// odd nodes when a majority of the members that hold a range's digest
// agree.

// healthLogDiverged: the node's log differs from another member's.
const healthLogDiverged = "log_diverged"

type logDigestJSON struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	Sum   string `json:"sum"` // hex SHA-256
}

type logDivergenceJSON struct {
	Peer          uint32 `json:"peer"`
	First         uint64 `json:"first"`
	Last          uint64 `json:"last"`
	Ours          string `json:"ours"`
	Theirs        string `json:"theirs"`
	Known         uint32 `json:"known"`
	HoldingOurs   uint32 `json:"holding_ours"`
	HoldingTheirs uint32 `json:"holding_theirs"`
	OddNode       uint32 `json:"odd_node"` // 0: the reporter could not tell
}

type logOddJSON struct {
	First    uint64 `json:"first"`
	Last     uint64 `json:"last"`
	Ours     string `json:"ours"`
	Majority string `json:"majority"`
	Since    string `json:"since"` // RFC 3339
}

func logOddJSONs(st *pb.NodeStatus) []logOddJSON {
	out := []logOddJSON{}
	for _, r := range st.LogOddRanges {
		out = append(out, logOddJSON{First: r.First, Last: r.Last, Ours: hex.EncodeToString(r.Ours), Majority: hex.EncodeToString(r.Majority),
			Since: time.Unix(0, r.SinceUnixNano).UTC().Format(time.RFC3339)})
	}
	return out
}

// describeOdd is one line for people.
func describeOdd(self uint32, r logOddJSON) string {
	return fmt.Sprintf("log of node %d is the odd one at indexes [%d, %d] since %s (ours %.16s, the majority's %.16s): remove it and add it back with an empty dir",
		self, r.First, r.Last, r.Since, r.Ours, r.Majority)
}

func logDigestsJSON(st *pb.NodeStatus) ([]logDigestJSON, []logDivergenceJSON) {
	ds, divs := []logDigestJSON{}, []logDivergenceJSON{}
	for _, d := range st.LogDigests {
		ds = append(ds, logDigestJSON{First: d.First, Last: d.Last, Sum: hex.EncodeToString(d.Sum)})
	}
	for _, d := range st.LogDivergences {
		divs = append(divs, logDivergenceJSON{Peer: d.Peer, First: d.First, Last: d.Last,
			Ours: hex.EncodeToString(d.Ours), Theirs: hex.EncodeToString(d.Theirs),
			Known: d.Known, HoldingOurs: d.HoldingOurs, HoldingTheirs: d.HoldingTheirs, OddNode: d.OddNode})
	}
	return ds, divs
}

// describeDivergence is one line for people.
func describeDivergence(self uint32, d logDivergenceJSON) string {
	odd := "which is odd is not known here"
	if d.OddNode != 0 {
		odd = fmt.Sprintf("node %d is the odd one (%d of %d digests known agree against it)", d.OddNode, max(d.HoldingOurs, d.HoldingTheirs), d.Known)
	}
	return fmt.Sprintf("log of node %d diverged from node %d's at indexes [%d, %d] (ours %.16s, theirs %.16s): %s",
		self, d.Peer, d.First, d.Last, d.Ours, d.Theirs, odd)
}

// judgeLogDigests returns the cluster's log divergences as problems:
// those the members' digests show when compared with each other, then
// those the members reported; and the ids of the rows whose log diverged
// (the odd ones when a majority tells, else every side).
func judgeLogDigests(rows []clusterRow) (diverged map[uint32]bool, problems []string) {
	diverged = map[uint32]bool{}
	type rng struct{ first, last uint64 }
	holders := map[rng]map[string][]uint32{} // range -> sum -> nodes
	for _, r := range rows {
		if r.Status == nil {
			continue
		}
		for _, d := range r.Status.LogDigests {
			k := rng{d.First, d.Last}
			if holders[k] == nil {
				holders[k] = map[string][]uint32{}
			}
			holders[k][d.Sum] = append(holders[k][d.Sum], r.ID)
		}
	}
	resolved := map[rng]bool{} // a majority of the members' digests names the odd nodes
	ranges := make([]rng, 0, len(holders))
	for k := range holders {
		ranges = append(ranges, k)
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].first < ranges[j].first })
	for _, k := range ranges {
		sums := holders[k]
		if len(sums) < 2 {
			continue
		}
		total := 0
		keys := make([]string, 0, len(sums))
		for s, ids := range sums {
			total += len(ids)
			keys = append(keys, s)
		}
		sort.Slice(keys, func(i, j int) bool { // larger groups first
			if len(sums[keys[i]]) != len(sums[keys[j]]) {
				return len(sums[keys[i]]) > len(sums[keys[j]])
			}
			return keys[i] < keys[j]
		})
		var parts []string
		for _, s := range keys {
			parts = append(parts, fmt.Sprintf("%s: %.16s", nodeList(sums[s]), s))
		}
		verdict := "no majority: compare the nodes' data"
		if len(sums[keys[0]]) > total/2 {
			var odd []uint32
			for _, s := range keys[1:] {
				odd = append(odd, sums[s]...)
			}
			verdict = fmt.Sprintf("the odd %s: remove and add back with an empty dir", nodeList(odd))
			resolved[k] = true
			for _, id := range odd {
				diverged[id] = true
			}
		} else {
			for _, s := range keys {
				for _, id := range sums[s] {
					diverged[id] = true
				}
			}
		}
		problems = append(problems, fmt.Sprintf("log diverged at indexes [%d, %d] (digests %s); %s", k.first, k.last, strings.Join(parts, ", "), verdict))
	}
	for _, r := range rows {
		if r.Status == nil {
			continue
		}
		for _, o := range r.Status.LogOddRanges {
			problems = append(problems, describeOdd(r.ID, o))
			diverged[r.ID] = true
		}
		for _, d := range r.Status.LogDivergences {
			problems = append(problems, describeDivergence(r.ID, d))
			switch {
			case resolved[rng{d.First, d.Last}]:
			case d.OddNode != 0:
				diverged[d.OddNode] = true
			default: // either side may be the odd one
				diverged[r.ID], diverged[d.Peer] = true, true
			}
		}
	}
	return diverged, problems
}

func nodeList(ids []uint32) string {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	if len(ids) == 1 {
		return "node " + s[0]
	}
	return "nodes " + strings.Join(s, ", ")
}
