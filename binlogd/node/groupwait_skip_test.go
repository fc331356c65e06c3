package node

import (
	"database/sql/driver"
	"errors"
	"io"
	"testing"
	"time"
)

// After a period whose query failed, tuneGroupCommit sets the count to 0
// ("start from no wait") but kept its own idea of the count: when the
// next periods' groups ask for that same count, it saw no change to make
// and left MariaDB without a wait for as long as the load stayed the same.
func TestTuneGroupCommitResumesAfterASkippedPeriod(t *testing.T) {
	srv, stop := startTuner(2 * time.Millisecond)
	// Each send is answered by one SHOW GLOBAL STATUS, so the tuner has
	// finished with a reading once it asks for the next one.
	steady := func(i uint64) ackScriptedReading { return ackScriptedReading{commits: 100 * i, groups: 20 * i} } // groups of 5
	srv.readings <- steady(0)                                                                                   // first period: reset to 0
	srv.readings <- steady(1)                                                                                   // groups of 5 ask for 9
	srv.readings <- ackScriptedReading{err: errors.New("connection reset")}                                     // one period skipped
	if got := srv.last().count; got != 9 {
		t.Fatalf("groups of 5: binlog_commit_wait_count=%d, want 9", got)
	}
	srv.readings <- steady(2) // back: reset to 0
	srv.readings <- steady(3) // the same groups of 5
	srv.readings <- steady(4)
	srv.readings <- steady(5) // the tuner is done with steady(4)
	if got := srv.last().count; got != 9 {
		t.Errorf("groups of 5 again after a skipped period: binlog_commit_wait_count=%d, want 9: after the reset to 0 it still took the count to be 9, the same as the groups ask for", got)
	}
	stop()
	if got := srv.last().count; got != 0 {
		t.Errorf("after the term: binlog_commit_wait_count=%d, want 0", got)
	}
}

// scriptedRows are a SHOW GLOBAL STATUS answer (ackScriptedServer).
type scriptedRows struct {
	vals [][2]string
	i    int
}

func (r *scriptedRows) Columns() []string { return []string{"Variable_name", "Value"} }
func (r *scriptedRows) Close() error      { return nil }
func (r *scriptedRows) Next(dest []driver.Value) error {
	if r.i == len(r.vals) {
		return io.EOF
	}
	dest[0], dest[1] = r.vals[r.i][0], r.vals[r.i][1]
	r.i++
	return nil
}
