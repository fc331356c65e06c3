package checker

import (
	"fmt"

	"phxgo/jepsen/history"
)

// Validity of a history under a checker.
type Validity string

// Validities.
const (
	Valid   Validity = "true"
	Invalid Validity = "false"
	Unknown Validity = "unknown"
)

// Anomaly is one violation found by a checker. Ops are history indexes.
type Anomaly struct {
	Kind   string `json:"kind"`
	Key    int64  `json:"key,omitempty"`
	Detail string `json:"detail"`
	Ops    []int  `json:"ops,omitempty"`
}

// Result of one checker.
type Result struct {
	Checker   string         `json:"checker"`
	Valid     Validity       `json:"valid"`
	Anomalies []Anomaly      `json:"anomalies,omitempty"`
	Info      map[string]any `json:"info,omitempty"`
}

// maxAnomalies bounds the anomalies kept per kind so results stay readable.
const maxAnomalies = 20

func (r *Result) add(a Anomaly) {
	r.Valid = Invalid
	n := 0
	for _, x := range r.Anomalies {
		if x.Kind == a.Kind {
			n++
		}
	}
	if n < maxAnomalies {
		r.Anomalies = append(r.Anomalies, a)
	}
	if r.Info == nil {
		r.Info = map[string]any{}
	}
	k := "count-" + a.Kind
	c, _ := r.Info[k].(int)
	r.Info[k] = c + 1
}

func (r *Result) setInfo(k string, v any) {
	if r.Info == nil {
		r.Info = map[string]any{}
	}
	r.Info[k] = v
}

// Combine folds validities: any Invalid wins, then any Unknown.
func Combine(vs ...Validity) Validity {
	out := Valid
	for _, v := range vs {
		switch v {
		case Invalid:
			return Invalid
		case Unknown:
			out = Unknown
		case Valid:
		default:
			out = Unknown
		}
	}
	return out
}

// clientOps returns the client operations of h (fault windows dropped).
func clientOps(h []history.Op) []history.Op {
	out := make([]history.Op, 0, len(h))
	for _, op := range h {
		if op.IsClient() {
			out = append(out, op)
		}
	}
	return out
}

func arg(op history.Op, i int) (int64, error) {
	if i >= len(op.Arg) {
		return 0, fmt.Errorf("op %d %s: missing arg %d", op.Index, op.F, i)
	}
	return op.Arg[i], nil
}
