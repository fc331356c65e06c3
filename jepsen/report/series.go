package report

import (
	"math"
	"sort"

	"phxgo/jepsen/history"
)

// point is one client operation on the latency plot.
type point struct {
	t       float64 // invoke, seconds since the run began
	latency float64 // milliseconds
	outcome history.Outcome
}

// Fault is one nemesis fault window, in seconds since the run began.
type Fault struct {
	Start, Heal float64
	Note        string
	Outcome     history.Outcome
	Error       string
}

// Duration is how long the fault was in place.
func (f Fault) Duration() float64 { return f.Heal - f.Start }

// series is what the pictures are drawn from.
type series struct {
	points []point
	faults []Fault
	end    float64 // the last completion, seconds
	// okPerBucket counts ok completions in [i*bucket, (i+1)*bucket).
	okPerBucket []int
	bucket      float64 // seconds
}

const nsPerSecond = 1e9

// build splits a history into points and fault windows and buckets the ok
// completions. A fault without a heal (the run ended first) lasts until
// the end of the history.
func build(ops []history.Op) series {
	var s series
	for _, op := range ops {
		s.end = max(s.end, float64(op.Complete)/nsPerSecond, float64(op.Invoke)/nsPerSecond)
	}
	for _, op := range ops {
		start, stop := float64(op.Invoke)/nsPerSecond, float64(op.Complete)/nsPerSecond
		if !op.IsClient() {
			if stop < start {
				stop = s.end
			}
			s.faults = append(s.faults, Fault{Start: start, Heal: stop, Note: op.Note, Outcome: op.Outcome, Error: op.Error})
			continue
		}
		s.points = append(s.points, point{t: start, latency: math.Max(0, stop-start) * 1000, outcome: op.Outcome})
	}
	sort.Slice(s.faults, func(i, j int) bool { return s.faults[i].Start < s.faults[j].Start })
	// One-second buckets, wider for long runs so a bucket stays at least a
	// couple of pixels wide.
	s.bucket = 1
	for s.end/s.bucket > 600 {
		s.bucket *= 2
	}
	s.okPerBucket = make([]int, int(s.end/s.bucket)+1)
	for _, op := range ops {
		if op.IsClient() && op.Outcome == history.OK {
			s.okPerBucket[int(float64(op.Complete)/nsPerSecond/s.bucket)]++
		}
	}
	return s
}
