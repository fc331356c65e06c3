package nemesis

import (
	"math/rand/v2"
	"slices"
)

// Links are pairs of node IDs whose traffic is cut, each pair once with
// the smaller ID first.

// isolate cuts id from every other node.
func isolate(ids []uint32, id uint32) [][2]uint32 {
	var out [][2]uint32
	for _, o := range ids {
		if o != id {
			out = append(out, pair(id, o))
		}
	}
	return out
}

// bridgeless cuts every link between the two sides.
func bridgeless(a, b []uint32) [][2]uint32 {
	var out [][2]uint32
	for _, x := range a {
		for _, y := range b {
			out = append(out, pair(x, y))
		}
	}
	slices.SortFunc(out, cmpPair)
	return out
}

// majorityRing arranges ring so that every node keeps links only to its
// ring neighbours within distance d, d the least with 2d+1 >= majority:
// each node then sees a majority (itself and 2d others), and no two
// adjacent nodes see the same one. With fewer than 4 nodes nothing is cut.
func majorityRing(ring []uint32) [][2]uint32 {
	n := len(ring)
	maj := n/2 + 1
	d := maj / 2 // 2d+1 >= maj
	var out [][2]uint32
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			dist := j - i
			if n-dist < dist {
				dist = n - dist
			}
			if dist > d {
				out = append(out, pair(ring[i], ring[j]))
			}
		}
	}
	slices.SortFunc(out, cmpPair)
	return out
}

func pair(a, b uint32) [2]uint32 {
	if a > b {
		a, b = b, a
	}
	return [2]uint32{a, b}
}

func cmpPair(x, y [2]uint32) int {
	if x[0] != y[0] {
		return int(x[0]) - int(y[0])
	}
	return int(x[1]) - int(y[1])
}

func shuffled(rng *rand.Rand, ids []uint32) []uint32 {
	out := slices.Clone(ids)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
