package node

import (
	"context"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/masterlease"
	pb "phxgo/proto"
)

// Log retention. The Paxos log holds every binlog batch; without
// compaction it grows forever. The retention loop compacts it by index
// range (paxos Compact, which cuts at a snapshot of the lease state):
//
//   - normally up to the newest point that is older than log_retention
//     AND whose last valid GTID every member's MariaDB has applied
//     (this node's from its own poll, peers' from their Admin Status);
//   - when the stored log exceeds log_retention_bytes, also past lagging
//     members, the oldest half of what this node's MariaDB applied at a
//     time, but never past this node's MariaDB. A member left behind gets
//     error 1236 from its binlogd and its status says "reseed this node".
//
// Points are samples (time, applied index, last valid GTID) the loop
// takes as the log grows; only points without a split transaction in
// flight are taken, so a replica at a point's GTID can be served from it.

// retentionSample is a compaction candidate: through index, the valid
// binlog ends at gtid; seen at `at`.
type retentionSample struct {
	at    time.Time
	index uint64
	gtid  binlog.GTID
}

type retention struct {
	n       *Node
	mu      sync.Mutex // guards the fields below
	samples []retentionSample
	bytes   int64
}

// maxRetentionSamples bounds the samples; when full, every other one is
// dropped, so they stay spread over the retained log.
const maxRetentionSamples = 4096

// retentionPeriod is how often the loop runs: a quarter of the retention,
// between 200ms and 10s.
func retentionPeriod(retain time.Duration) time.Duration {
	return min(max(retain/4, 200*time.Millisecond), 10*time.Second)
}

func (n *Node) retentionLoop(ctx context.Context) {
	every(ctx, retentionPeriod(n.cfg.LogRetention.Duration), func() { n.ret.tick(ctx, time.Now()) })
}

func (r *retention) tick(ctx context.Context, now time.Time) {
	n := r.n
	st := n.lease.State()
	size := dirSize(filepath.Join(n.cfg.Dir, "paxos"))
	r.mu.Lock()
	r.bytes = size
	if st.Partial.IsZero() && (len(r.samples) == 0 || r.samples[len(r.samples)-1].index < st.Applied) {
		r.samples = append(r.samples, retentionSample{at: now, index: st.Applied, gtid: binlog.GTID(st.LastGTID)})
		if len(r.samples) > maxRetentionSamples {
			kept := r.samples[:0]
			for i, s := range r.samples {
				if i%2 == 0 || i == len(r.samples)-1 {
					kept = append(kept, s)
				}
			}
			r.samples = kept
		}
	}
	r.mu.Unlock()
	n.m.logBytes.Set(float64(size))

	first := n.px.Status().FirstIndex
	// Durable positions: a relaxed replica may lose what it applied
	// after its synced position in a host crash, and fetch it again.
	local, localOK := n.localDurable()
	if n.witness() { // no MariaDB of its own: the data nodes' (witness.go)
		local, localOK = r.dataNodesDurable(ctx)
	}
	minGTID, membersOK := r.membersApplied(ctx, local, localOK)
	r.mu.Lock()
	target, overBytes := retentionTarget(r.samples, retentionInput{
		now: now, retain: n.cfg.LogRetention.Duration, limit: n.cfg.LogRetentionBytes, size: size,
		first: first, applied: st.Applied, members: minGTID, membersOK: membersOK, local: local, localOK: localOK,
	})
	r.mu.Unlock()
	if target+1 <= first {
		return
	}
	if overBytes {
		n.log.Warn("log over log_retention_bytes: compacting past members that have not applied it; they will need a reseed",
			"bytes", size, "log_retention_bytes", n.cfg.LogRetentionBytes, "up_to_index", target)
	}
	newFirst, err := n.px.Compact(ctx, target+1)
	if err != nil {
		n.log.Error("log compaction failed", "target_index", target, "err", err)
		return
	}
	if newFirst > first && overBytes {
		// The wal reclaims a compaction's space at a cheap moment; this
		// one is for space, and the next tick must see the new size, or
		// it would halve the log again.
		if err := n.px.ReclaimNow(); err != nil {
			n.log.Warn("reclaiming the compacted log's disk space", "err", err)
		}
	}
	if newFirst > first {
		n.m.compactions.Inc()
		n.log.Info("log compacted", "first_index", newFirst, "was", first, "target_index", target, "log_bytes", size)
		r.mu.Lock()
		k := 0
		for k < len(r.samples)-1 && r.samples[k+1].index < newFirst {
			k++
		}
		r.samples = append(r.samples[:0], r.samples[k:]...)
		r.mu.Unlock()
	}
}

// retentionInput is what one retention decision looks at.
type retentionInput struct {
	now            time.Time
	retain         time.Duration
	limit, size    int64       // log_retention_bytes, bytes on disk
	first, applied uint64      // the log's first index, this node's applied index
	members        binlog.GTID // lowest GTID every member's MariaDB applied
	membersOK      bool        // false: some member could not be asked
	local          binlog.GTID // this node's MariaDB
	localOK        bool
}

// retentionTarget is the retention policy: the highest log index that
// may be compacted (0: none), and whether it goes past members because
// the log is over its byte limit. Pure, so it is tested alone.
func retentionTarget(samples []retentionSample, in retentionInput) (target uint64, overBytes bool) {
	newest := func(ok func(retentionSample) bool) uint64 {
		for i := len(samples) - 1; i >= 0; i-- {
			if ok(samples[i]) {
				return samples[i].index
			}
		}
		return 0
	}
	if in.membersOK && in.localOK {
		target = newest(func(s retentionSample) bool {
			return !s.at.After(in.now.Add(-in.retain)) && covers(in.members, s.gtid)
		})
	}
	if in.size > in.limit && in.localOK {
		// Over the byte limit: the oldest half of what our own MariaDB
		// applied, whoever else still needs it.
		mid := in.first + (in.applied-min(in.first, in.applied))/2
		if t := newest(func(s retentionSample) bool { return s.index <= mid && covers(in.local, s.gtid) }); t > target {
			target, overBytes = t, true
		}
	}
	return target, overBytes
}

// covers reports whether a MariaDB at applied has applied the valid
// binlog through gtid (the valid chain's sequence numbers only grow).
func covers(applied, gtid binlog.GTID) bool {
	return gtid.IsZero() || (applied.Domain == gtid.Domain && applied.Seq >= gtid.Seq)
}

// localApplied is this node's MariaDB's gtid_current_pos, when known.
func (n *Node) localApplied() (binlog.GTID, bool) {
	if !n.mysqlUp.Load() {
		return binlog.GTID{}, false
	}
	return *n.applied.Load(), true
}

// membersApplied returns the lowest GTID every member's MariaDB applied
// and synced; ok=false when some member could not be asked.
func (r *retention) membersApplied(ctx context.Context, local binlog.GTID, localOK bool) (binlog.GTID, bool) {
	n := r.n
	if !localOK {
		return binlog.GTID{}, false
	}
	low := local
	for _, m := range n.members() { // from the log: added members count too
		if m.ID == n.cfg.ID || m.Witness { // a witness has no MariaDB to wait for (witness.go)
			continue
		}
		g, err := r.peerDurable(ctx, m.ID)
		if err != nil {
			return binlog.GTID{}, false
		}
		if g.Seq < low.Seq || g.Domain != low.Domain {
			low = g
		}
	}
	return low, true
}

// peerDurable asks member id for its MariaDB's durable position.
func (r *retention) peerDurable(ctx context.Context, id uint32) (binlog.GTID, error) {
	cl, err := r.n.peerAdmin(id)
	if err != nil {
		return binlog.GTID{}, err
	}
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	st, err := cl.Status(qctx, &pb.StatusRequest{})
	cancel()
	if err != nil {
		return binlog.GTID{}, err
	}
	pos := st.MysqlDurableGtidPos
	if pos == "" { // a binlogd from before relaxed replicas: durable MariaDB
		pos = st.MysqlGtidPos
	}
	return binlog.ParseGTID(pos)
}

// retentionStatus fills the retention fields of a status: the first
// retained index and GTID, and whether this node's MariaDB needs history
// that is gone.
func (n *Node) retentionStatus(st *pb.NodeStatus) {
	ps := n.px.Status()
	st.FirstIndex = max(ps.FirstIndex, 1)
	if n.ret != nil {
		n.ret.mu.Lock()
		st.LogBytes = uint64(n.ret.bytes)
		n.ret.mu.Unlock()
	}
	base, snap, err := n.px.Base()
	if err != nil || base == 0 {
		return
	}
	ls, err := masterlease.DecodeState(snap)
	if err != nil {
		return
	}
	first := binlog.GTID(ls.LastGTID)
	st.FirstGtid = first.String()
	if local, ok := n.localApplied(); ok && !first.IsZero() && !covers(local, first) {
		st.ReseedNeeded = true
	}
}

// walSegmentBytes sizes the wal's segment files for a log kept under
// limit bytes: the wal frees space behind a compaction a whole segment at
// a time, so the segment being written may hold up to a segment of
// compacted entries. A sixteenth of the limit keeps that slack small
// against it (64 MiB at the default 1 GiB; at least 1 MiB, so a tiny
// limit does not cost a new file every few writes).
func walSegmentBytes(limit int64) int64 {
	return min(64<<20, max(1<<20, limit/16))
}

// dirSize is the disk space of the files under dir, as du counts it
// (Badger preallocates sparse files whose apparent size means nothing).
func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() {
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					total += st.Blocks * 512
				} else {
					total += info.Size()
				}
			}
		}
		return nil
	})
	return total
}

// compactBaseWhole accepts a checkpoint as the log's base only when no
// split transaction is in flight there. Retention picks such points, but
// paxos rounds a compaction down to a checkpoint (one every
// SnapshotEvery entries, wherever it falls); a base inside a split
// transaction leaves its first fragments compacted away, so a replica at
// the GTID before it must be reseeded.
func compactBaseWhole(snap []byte) bool {
	st, err := masterlease.DecodeState(snap)
	return err == nil && st.Partial.IsZero()
}
