package capture

import (
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	m := newMaster(t)
	sink := newRecSink()
	_, _, stop := runCapture(t, m.config(), sink)
	for i := 0; i < 5; i++ {
		mustExec(t, m.db, "INSERT INTO t.x VALUES ("+string(rune('1'+i))+", 'a')")
	}
	want := gtidPos(t, m.db)
	await(t, 10*time.Second, "all txns", func() bool {
		tx := sink.snapshot()
		return len(tx) > 0 && tx[len(tx)-1].GTID == want
	})
	checkTxns(t, sink.snapshot())
	t.Log(len(sink.snapshot()), stop())
}
