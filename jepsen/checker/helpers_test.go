package checker

import (
	"testing"

	"phxgo/jepsen/history"
)

// hb builds hand-written histories: times are plain integers.
type hb struct{ ops []history.Op }

func (b *hb) add(op history.Op) *hb {
	op.Index = len(b.ops)
	b.ops = append(b.ops, op)
	return b
}

func (b *hb) op(p int, f string, key int64, t0, t1 int64, out history.Outcome, arg []int64, result []int64) *hb {
	return b.add(history.Op{Process: p, F: f, Key: key, Invoke: t0, Complete: t1, Outcome: out, Arg: arg, Result: result})
}

func v(xs ...int64) []int64 {
	if xs == nil {
		return []int64{}
	}
	return xs
}

func wantValidity(t *testing.T, r Result, want Validity) {
	t.Helper()
	if r.Valid != want {
		t.Fatalf("%s: valid=%s, want %s; anomalies=%+v info=%v", r.Checker, r.Valid, want, r.Anomalies, r.Info)
	}
}

func wantKind(t *testing.T, r Result, kind string) {
	t.Helper()
	wantValidity(t, r, Invalid)
	for _, a := range r.Anomalies {
		if a.Kind == kind {
			return
		}
	}
	t.Fatalf("%s: no %q anomaly in %+v", r.Checker, kind, r.Anomalies)
}
