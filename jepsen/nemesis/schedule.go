package nemesis

import (
	"context"
	"log/slog"
	"time"

	"phxgo/jepsen/history"
)

// Schedule times the fault cycle.
type Schedule struct {
	Kinds   []string
	Quiet   time.Duration // before every fault
	HoldMin time.Duration // a fault is held for a uniform time in [HoldMin, HoldMax]
	HoldMax time.Duration // (never less than the fault's MinHold)
	HealTO  time.Duration // bound on one heal
	// RoundRobin takes Kinds in turn instead of at random (short runs
	// that must see every kind).
	RoundRobin bool
}

// DefaultSchedule scales the cycle by the lease: faults outlive a lease.
func DefaultSchedule(kinds []string, lease time.Duration) Schedule {
	return Schedule{
		Kinds:   kinds,
		Quiet:   max(5*time.Second, 2*lease),
		HoldMin: max(3*time.Second, lease),
		HoldMax: max(10*time.Second, 3*lease),
		HealTO:  2 * time.Minute,
	}
}

// Run cycles faults until ctx ends, recording each window in rec. A fault
// in place when ctx ends is healed before Run returns.
func (n *Nemesis) Run(ctx context.Context, s Schedule, rec *history.Recorder) {
	if len(s.Kinds) == 0 {
		<-ctx.Done()
		return
	}
	for i := 0; ; i++ {
		if !sleep(ctx, s.Quiet) {
			return
		}
		kind := s.Kinds[i%len(s.Kinds)]
		if !s.RoundRobin {
			kind = s.Kinds[n.rng.IntN(len(s.Kinds))]
		}
		start := rec.Now()
		act, err := n.Inject(ctx, kind)
		if err != nil {
			slog.Warn("nemesis: inject failed", "kind", kind, "err", err)
		} else {
			slog.Info("nemesis: fault", "desc", act.Desc)
			hold := s.HoldMin
			if s.HoldMax > s.HoldMin {
				hold += time.Duration(n.rng.Int64N(int64(s.HoldMax - s.HoldMin)))
			}
			sleep(ctx, max(hold, act.MinHold))
		}
		op := history.Op{Process: history.NemesisProcess, F: history.FNemesis, Invoke: start, Outcome: history.OK}
		if act != nil {
			op.Note = act.Desc
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.HealTO)
			if herr := act.Heal(hctx); herr != nil {
				slog.Warn("nemesis: heal failed", "desc", act.Desc, "err", herr)
				op.Error = "heal: " + herr.Error()
			}
			cancel()
			slog.Info("nemesis: healed", "desc", act.Desc)
		} else {
			op.Note = kind
		}
		if err != nil {
			op.Outcome = history.Fail
			op.Error = err.Error()
		}
		op.Complete = rec.Now()
		rec.Add(op)
		if ctx.Err() != nil {
			return
		}
	}
}

// sleep waits d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
