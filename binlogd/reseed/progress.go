package reseed

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// progress prints one line per interval while a copy runs: bytes, rate
// and, against the source's estimate, percentage and ETA.
type progress struct {
	w         io.Writer
	label     string // line prefix; "" is "reseed"
	estimated int64
	start     time.Time
	bytes     atomic.Int64
	last      atomic.Int64  // UnixNano of the last bytes; 0: none yet (start counts)
	stall     time.Duration // the stream's stall bound, shown once it idles; 0: none
	stop      chan struct{}
	done      chan struct{}
}

// startProgress prints a line every interval until finish; stall is the
// stream's stall bound the lines mention once nothing arrives (0: none).
func startProgress(w io.Writer, label string, estimated int64, every, stall time.Duration) *progress {
	p := &progress{w: w, label: label, estimated: estimated, stall: stall, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				fmt.Fprintln(p.w, p.line(time.Now()))
			}
		}
	}()
	return p
}

func (p *progress) add(n int) {
	if n > 0 {
		p.bytes.Add(int64(n))
		p.last.Store(time.Now().UnixNano())
	}
}

// idleShown is how long a copy must go without bytes before its progress
// line says so.
const idleShown = 15 * time.Second

// finish stops the ticker and prints the final line.
func (p *progress) finish() {
	close(p.stop)
	<-p.done
	n, d := p.bytes.Load(), time.Since(p.start)
	fmt.Fprintf(p.w, "%s: received %s in %s (%.1f MiB/s)\n", p.name(), size(n), d.Round(100*time.Millisecond), mibps(n, d))
}

func (p *progress) name() string {
	if p.label == "" {
		return "reseed"
	}
	return p.label
}

func (p *progress) line(now time.Time) string {
	n, d := p.bytes.Load(), now.Sub(p.start)
	rate := mibps(n, d)
	s := fmt.Sprintf("%s: %s", p.name(), size(n))
	if p.estimated > 0 {
		// The estimate is the source's datadir: the stream may run past it
		// a little (or stop short), so never claim 100% before the end.
		pct := min(99, 100*n/p.estimated)
		s += fmt.Sprintf(" of ~%s (%d%%)", size(p.estimated), pct)
	}
	s += fmt.Sprintf(", %.1f MiB/s", rate)
	if p.estimated > 0 && rate > 0 {
		left := max(0, p.estimated-n)
		eta := time.Duration(float64(left) / (rate * (1 << 20)) * float64(time.Second))
		s += fmt.Sprintf(", ETA %s", eta.Round(time.Second))
	}
	last := p.start
	if ns := p.last.Load(); ns != 0 {
		last = time.Unix(0, ns)
	}
	if idle := now.Sub(last); idle >= idleShown {
		s += fmt.Sprintf(", nothing received for %s", idle.Round(time.Second))
		if p.stall > 0 {
			s += fmt.Sprintf(" (gives up at %s)", p.stall)
		}
	}
	return s
}

// size formats a byte count for people.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
