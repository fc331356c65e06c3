package replserver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
)

// slowOpen is a Source whose Open takes d, as binlogd's does when the
// replica's position lies behind a multi-GiB transaction in the log.
type slowOpen struct {
	Source
	d     time.Duration
	opens atomic.Int64
}

func (s *slowOpen) Open(ctx context.Context, pos binlog.GTIDList) (Cursor, error) {
	s.opens.Add(1)
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Source.Open(ctx, pos)
}

// TestSlowSeekKeepsReplica: a seek longer than the replica's
// slave_net_timeout must not make it give up. Jepsen big/kill (issue 20.4,
// seed 1796158502222665443 -quiet 11m) left a restarted node stuck: its
// endpoint sought 0-3-5 behind a 2 GiB load for ~14 s with nothing sent,
// the replica timed out after 10 s and reconnected, and each retry sought
// again. Here the seek takes twice slave_net_timeout; without the
// preamble and heartbeats during the seek the replica never catches up.
func TestSlowSeekKeepsReplica(t *testing.T) {
	m := newMaster(t)
	m.exec(t, "CREATE DATABASE seek", "CREATE TABLE seek.t (id INT PRIMARY KEY)", "INSERT INTO seek.t VALUES (1), (2)")
	m.sync(t)
	src := &slowOpen{Source: m.src, d: 4 * time.Second}
	srv := startEndpoint(t, src, "127.0.0.1:0", 500*time.Millisecond)
	r := newReplica(t, 2)
	r.exec(t, "SET GLOBAL slave_net_timeout=2")
	r.follow(t, srv.Addr(), 0.5)
	r.waitCaughtUp(t, m.gtidBinlogPos(t), 2*time.Minute)
	sameTables(t, m, r, "seek.t")
	if hb := srv.Stats().Heartbeats; hb == 0 {
		t.Fatalf("caught up with no heartbeat sent during a %s seek", src.d)
	}
	t.Logf("opens=%d heartbeats=%d", src.opens.Load(), srv.Stats().Heartbeats)
}
