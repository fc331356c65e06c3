package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenAfterPowerLossLeftEmptyBadgerFiles: a power loss can leave a
// memtable or value log file that Badger had created and sized but never
// synced, at length zero (found by the power nemesis: no node of the
// cluster could open its log again). Open removes them and keeps every
// saved record.
func TestOpenAfterPowerLossLeftEmptyBadgerFiles(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 10; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{fmt.Sprintf("%05d%s", 99, memFileExt), "000099.vlog"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l = openTest(t, dir, quietOptions())
	if got := l.LastIndex(); got != 10 {
		t.Fatalf("LastIndex %d, want 10", got)
	}
	for i := uint64(1); i <= 10; i++ {
		a, ok, err := l.Get(i)
		if err != nil || !ok || !equalAccepted(a, acc(i, 1)) {
			t.Fatalf("Get(%d) = %+v %v %v", i, a, ok, err)
		}
	}
	for _, name := range []string{"00099.mem", "000099.vlog"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.Size() == 0 {
			t.Fatalf("the empty %s is still there", name)
		}
	}
}
