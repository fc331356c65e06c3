package checker

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"testing"

	"phxgo/jepsen/history"
)

func readGzHistory(t *testing.T, path string) []history.Op {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var ops []history.Op
	dec := json.NewDecoder(zr)
	for {
		var op history.Op
		if err := dec.Decode(&op); err == io.EOF {
			return ops
		} else if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
}

// TestAppendFindsRWSplitSplitTransaction keeps the history of the finding
// of TestJepsenShortAppendRWSplit (seed 2, 2026-12-01; sqlproxy as of
// commit 1cfd465 plus the tree then): op 160, a transaction appending 137
// to key 2 and 138 to key 5 on n3's read/write-split port, right after
// n3's (the master's) mariadbd was killed, was acknowledged; 138 is in
// every later read, 137 in none. The new master's binlog holds the
// INSERT of 138 as a transaction of its own (GTID 0-1-56) and no node's
// binlog holds 137: the transaction was split across two backend
// connections, and the session's next BEGIN got 1568 (a transaction
// still open on its backend).
func TestAppendFindsRWSplitSplitTransaction(t *testing.T) {
	r := Append(readGzHistory(t, "testdata/rwsplit-split-txn-seed2.jsonl.gz"))
	wantKind(t, r, "lost-append")
	found := false
	for _, a := range r.Anomalies {
		if a.Kind == "lost-append" && a.Key == 2 && len(a.Ops) > 0 && a.Ops[0] == 160 {
			found = true
		}
	}
	if !found {
		t.Fatalf("op 160's lost append to key 2 not reported: %+v", r.Anomalies)
	}
	if r.Info["replica-reads"].(int) == 0 {
		t.Fatalf("no replica reads in the kept history: %v", r.Info)
	}
}
