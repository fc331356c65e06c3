package node

import (
	"testing"
	"time"

	"phxgo/binlogd/binlog"
)

func TestRetentionTarget(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := func(seq uint64) binlog.GTID { return binlog.GTID{Domain: 0, Server: 1, Seq: seq} }
	// Index 10*k holds GTID seq 100*k, seen at t0 + k minutes.
	var samples []retentionSample
	for k := uint64(1); k <= 10; k++ {
		samples = append(samples, retentionSample{at: t0.Add(time.Duration(k) * time.Minute), index: 10 * k, gtid: g(100 * k)})
	}
	base := retentionInput{
		now: t0.Add(10 * time.Minute), retain: 5 * time.Minute, limit: 1 << 30, size: 1 << 20,
		first: 1, applied: 100, members: g(1000), membersOK: true, local: g(1000), localOK: true,
	}
	cases := []struct {
		name      string
		edit      func(*retentionInput)
		want      uint64
		overBytes bool
	}{
		{"time bounds: only points at least 5 minutes old", func(*retentionInput) {}, 50, false},
		{"a lagging member holds the log", func(in *retentionInput) { in.members = g(250) }, 20, false},
		{"a member that could not be asked holds everything", func(in *retentionInput) { in.membersOK = false }, 0, false},
		{"own MariaDB unknown: nothing", func(in *retentionInput) { in.localOK = false; in.size = 1 << 40 }, 0, false},
		{"another GTID domain covers nothing", func(in *retentionInput) { in.members = binlog.GTID{Domain: 1, Seq: 5000} }, 0, false},
		{"over bytes: the oldest half, past a lagging member", func(in *retentionInput) { in.members = g(150); in.size = 2 << 30 }, 50, true},
		{"over bytes, never past our own MariaDB", func(in *retentionInput) {
			in.members, in.local, in.size = g(150), g(320), 2<<30
		}, 30, true},
		{"over bytes but time and members allow more", func(in *retentionInput) { in.size = 2 << 30; in.first = 60 }, 80, true},
	}
	for _, c := range cases {
		in := base
		c.edit(&in)
		got, over := retentionTarget(samples, in)
		if got != c.want || over != c.overBytes {
			t.Errorf("%s: target %d over %v, want %d %v", c.name, got, over, c.want, c.overBytes)
		}
	}
}

// TestWALSegmentBytes: segments are a sixteenth of the retention limit,
// within [1 MiB, 64 MiB].
func TestWALSegmentBytes(t *testing.T) {
	for _, c := range []struct{ limit, want int64 }{
		{1 << 30, 64 << 20},
		{8 << 30, 64 << 20},
		{256 << 20, 16 << 20},
		{64 << 10, 1 << 20},
	} {
		if got := walSegmentBytes(c.limit); got != c.want {
			t.Errorf("walSegmentBytes(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}
