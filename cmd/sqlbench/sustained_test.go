package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func resultsFile(t *testing.T, recs ...record) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	return &b
}

// The rate offered to both systems is the baseline's median sustained
// rate (its replicas' catch-up counted), rounded down.
func TestSustainedRate(t *testing.T) {
	recs := []record{
		insertRun(semiDirect, 16, 40000, 20, 20, 10, 0),   // 1,000/s
		insertRun(semiDirect, 16, 36000, 20, 20.5, 10, 0), // 888.9/s: the median
		insertRun(semiDirect, 16, 17000, 20, 0, 10, 0),    // 850/s
		insertRun(semiDirect, 64, 90000, 20, 10, 10, 0),   // another thread count
		insertRun(phxMaster, 16, 60000, 20, 0, 10, 0),     // another system
	}
	got, err := sustainedRate(resultsFile(t, recs...), semiDirect, testInsert, 16, 50)
	if err != nil || got != 850 {
		t.Errorf("sustainedRate = %d, %v; want 850 (888.9 rounded down to 50)", got, err)
	}
	if got, err := sustainedRate(resultsFile(t, recs...), semiDirect, testInsert, 64, 100); err != nil || got != 3000 {
		t.Errorf("64 threads: %d, %v; want 3000", got, err)
	}
	// A rate under one step is offered as one step, never 0 (which
	// would mean "no fixed rate" to sysbench).
	slow := insertRun(semiDirect, 16, 100, 20, 80, 10, 0) // 1/s
	if got, err := sustainedRate(resultsFile(t, slow), semiDirect, testInsert, 16, 50); err != nil || got != 50 {
		t.Errorf("slow: %d, %v; want 50", got, err)
	}
	if _, err := sustainedRate(resultsFile(t, recs...), semiDirect, testInsert, 32, 50); !errors.Is(err, errNoResults) {
		t.Errorf("no run at 32 threads: err %v, want errNoResults", err)
	}
	empty := insertRun(semiDirect, 16, 0, 0, 0, 10, 0) // a run that recorded nothing
	if _, err := sustainedRate(resultsFile(t, empty), semiDirect, testInsert, 16, 50); !errors.Is(err, errNoResults) {
		t.Errorf("zero-length run: err %v, want errNoResults", err)
	}
	if _, err := sustainedRate(bytes.NewBufferString("{not json\n"), semiDirect, testInsert, 16, 50); err == nil {
		t.Error("a corrupt results file gave no error")
	}
}
