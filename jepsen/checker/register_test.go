package checker

import (
	"os"
	"path/filepath"
	"testing"

	"phxgo/jepsen/history"
)

const (
	R = history.FRead
	W = history.FWrite
	C = history.FCAS
)

var (
	ok   = history.OK
	fail = history.Fail
	info = history.Info
)

func TestRegisterValid(t *testing.T) {
	var b hb
	b.op(0, R, 1, 0, 1, ok, nil, v()). // nil before any write
						op(0, W, 1, 2, 5, ok, v(3), nil).
						op(1, R, 1, 3, 4, ok, nil, v(3)). // concurrent with the write
						op(1, C, 1, 6, 7, ok, v(3, 4), nil).
						op(0, C, 1, 8, 9, fail, v(3, 5), v(0)). // fails: value is 4
						op(2, C, 1, 8, 9, fail, v(4, 5), nil).  // never ran (e.g. dial error): no constraint
						op(1, R, 1, 10, 11, ok, nil, v(4)).
						op(2, W, 2, 0, 20, ok, v(1), nil). // another key
						op(2, R, 2, 21, 22, ok, nil, v(1))
	dir := t.TempDir()
	html := filepath.Join(dir, "linear.html")
	r := Register(b.ops, RegisterOptions{HTMLPath: html})
	wantValidity(t, r, Valid)
	if st, err := os.Stat(html); err != nil || st.Size() == 0 {
		t.Fatalf("visualization not written: %v", err)
	}
}

func TestRegisterInfoWrites(t *testing.T) {
	// An info write may take effect long after it "completed", or never.
	var b hb
	b.op(0, W, 1, 0, 1, ok, v(1), nil).
		op(1, W, 1, 2, 3, info, v(2), nil). // unknown
		op(0, R, 1, 4, 5, ok, nil, v(1)).   // not yet applied
		op(0, R, 1, 6, 7, ok, nil, v(2)).   // now applied
		op(2, C, 1, 8, 9, info, v(2, 7), nil).
		op(0, R, 1, 10, 11, ok, nil, v(2)). // the CAS never happened (yet)
		op(3, R, 1, 12, 13, info, nil, nil) // info read: no information
	wantValidity(t, Register(b.ops, RegisterOptions{}), Valid)

	// ...but once the unknown CAS is seen it cannot be undone.
	b.op(0, R, 1, 14, 15, ok, nil, v(7)).op(0, R, 1, 16, 17, ok, nil, v(2))
	wantKind(t, Register(b.ops, RegisterOptions{}), "nonlinearizable")
}

func TestRegisterStaleRead(t *testing.T) {
	var b hb
	b.op(0, W, 1, 0, 1, ok, v(1), nil).
		op(0, W, 1, 2, 3, ok, v(2), nil).
		op(1, R, 1, 4, 5, ok, nil, v(1)) // the write of 2 completed before the read began
	r := Register(b.ops, RegisterOptions{})
	wantKind(t, r, "nonlinearizable")
}

func TestRegisterLostWrite(t *testing.T) {
	var b hb
	b.op(0, W, 1, 0, 1, ok, v(5), nil).
		op(1, R, 1, 2, 3, ok, nil, v()) // acknowledged write vanished
	wantKind(t, Register(b.ops, RegisterOptions{}), "nonlinearizable")
}

func TestRegisterDoubleApplyCAS(t *testing.T) {
	// Two CAS 1->2 both succeed with nothing writing 1 in between.
	var b hb
	b.op(0, W, 1, 0, 1, ok, v(1), nil).
		op(0, C, 1, 2, 3, ok, v(1, 2), nil).
		op(1, C, 1, 4, 5, ok, v(1, 2), nil)
	wantKind(t, Register(b.ops, RegisterOptions{}), "nonlinearizable")
}

func TestRegisterFailedCASMustNotApply(t *testing.T) {
	var b hb
	b.op(0, W, 1, 0, 1, ok, v(1), nil).
		op(0, C, 1, 2, 3, fail, v(1, 9), v(0)). // ran, claimed no match although it matched
		op(1, R, 1, 4, 5, ok, nil, v(9))
	wantKind(t, Register(b.ops, RegisterOptions{}), "nonlinearizable")
}

func TestRegisterIgnoresNemesisRecords(t *testing.T) {
	var b hb
	b.add(history.Op{Process: history.NemesisProcess, F: history.FNemesis, Note: "kill", Invoke: 0, Complete: 10})
	b.op(0, W, 1, 0, 1, ok, v(1), nil).op(0, R, 1, 2, 3, ok, nil, v(1))
	wantValidity(t, Register(b.ops, RegisterOptions{}), Valid)
}
