package node

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The master's binlog group commit follows the load (config
// group_commit_wait): while this node is master, binlogd sets MariaDB's
// binlog_commit_wait_count to about the size its commit groups reach, and
// binlog_commit_wait_usec to 1.5x the semi-sync ACK time of the last
// period (at most group_commit_wait), so a group's leader waits somewhat
// longer than the group ahead of it waits for its ACK before writing.
//
// Why: MariaDB 10.11 finishes binlog groups one after another behind the
// semi-sync wait. A group's leader waits for its ACK holding
// LOCK_after_binlog_sync; the next group cannot finish before, and the
// one after it cannot even write its binlog. So a commit cycle is a
// group's binlog write and fsync plus a whole Paxos round, and client
// latency is about three cycles (issue 19: at 4 and 16 sysbench threads
// the cycle was the binlog sync plus the semi-sync wait, not the larger
// of the two). Waiting for more transactions costs nothing while the
// group ahead still waits for its ACK, and every transaction that joins
// shares the round. At 16 threads, a count of 16 and 5 ms gave 1.4x the
// commits per second, 0.7x the p95 and 2.2x transactions per Paxos value.
//
// How long: in step with the ACK round, which grows with the load. A
// wait much longer than the round ahead only delays the group: at 4
// threads (ACKs of about 1.6 ms, groups of 3.7) 5 ms gave 0.65x the
// commits per second of 2 ms. A shorter one leaves transactions for the
// next round: at 16 threads (ACKs of about 3.2 ms) 5 ms cost the binlogds
// 0.70x the CPU per transaction of 2 ms, with 1.1x the commits per second
// and 0.8x the p95 (scripts/bench-binlogd.sh, three pairs in turns). In
// theory the group should close when the round ahead ends less its own
// binlog sync; on a CPU-bound host bigger groups also save CPU for
// everything else, and 1.5x the mean ACK time did better than 1x (at 16
// threads 0.80x against 0.95x the binlogds' CPU of a fixed 2 ms; at 4
// threads even with it). MariaDB's own wait per group
// (Rpl_semi_sync_master_tx_wait_time) and binlogd's ACK time agreed
// within 5% at 4 and 16 threads.
//
// A wait helps only where commits overlap: with one client it delays
// every commit by the whole usec (1 thread: 279 to 91 commits per second
// at a count of 16 and 5 ms). So the wait is off while groups average
// under one and a quarter transactions, or under 32 groups a second come
// (nothing to share a round with), and otherwise the count is half as
// many again as the groups reached. Groups cannot reach that: the count
// is a switch and a cap, and the usec is what each group waits. A wait
// that runs out is not a sign to shrink: it still gathered what came
// while the group ahead awaited its ACK (16 threads, 2 ms: a count of 14
// timed out in most groups and gave 1.2x the commits per second of no
// wait; a count that fell back to what the groups reached, 8, gave none
// of it). The wait itself makes groups bigger, so once on it stays on
// only while they average 1.6: a busy client with an occasional second
// one does not keep paying it.
const (
	groupWaitPeriod    = 250 * time.Millisecond
	groupWaitStartSize = 1.25 // groups' average size that turns the wait on
	groupWaitKeepSize  = 1.6  // ... and keeps it on, measured with the wait
	groupWaitReach     = 1.5  // the count asks for this times the groups' size (+1)
	groupWaitMinGroups = 8    // groups in a period (32/s) below which the wait is off
	groupWaitMaxCount  = 256
	// The usec: 1.5x the period's mean ACK time, rounded to groupWaitStep, at
	// least groupWaitMinUsec and at most group_commit_wait. Until a
	// period with a count above 0 has timed an ACK (after a reset, or
	// when the wait turns on in a period without ACKs) the usec is
	// groupWaitFirstUsec.
	groupWaitStep      = 100 * time.Microsecond
	groupWaitMinUsec   = 200 * time.Microsecond
	groupWaitFirstUsec = 2 * time.Millisecond
)

// waitSetting is what the tuner has MariaDB do: binlog_commit_wait_count
// (0: no wait) and binlog_commit_wait_usec.
type waitSetting struct {
	count int
	usec  time.Duration
}

// ackTimes are capture's semi-sync ACK counters (capture.Stats): ACKs
// sent and the time from each ACK request to its ACK, summed.
type ackTimes struct {
	acks uint64
	sum  time.Duration
}

func (a ackTimes) minus(o ackTimes) ackTimes {
	if a.acks < o.acks || a.sum < o.sum { // cannot happen (one capture per term, counters only grow); kept as minus's guard
		return ackTimes{}
	}
	return ackTimes{a.acks - o.acks, a.sum - o.sum}
}

// nextWaitUsec is the binlog_commit_wait_usec for the next period: one
// and a half times the mean ACK time of the last (acks), within
// [groupWaitMinUsec, most]; cur (0: none set yet) when no ACK was timed.
func nextWaitUsec(cur time.Duration, acks ackTimes, most time.Duration) time.Duration {
	w := cur
	if acks.acks > 0 {
		// The floor here too: a mean under 34µs rounds to 0, which is not
		// "none set yet".
		w = max((acks.sum * 3 / 2 / time.Duration(acks.acks)).Round(groupWaitStep), groupWaitMinUsec)
	}
	if w == 0 {
		w = groupWaitFirstUsec
	}
	return min(max(w, groupWaitMinUsec), most)
}

// groupCounters are MariaDB's group-commit counters (SHOW GLOBAL STATUS),
// or the difference of two readings.
type groupCounters struct {
	commits uint64 // Binlog_commits
	groups  uint64 // Binlog_group_commits
}

func (c groupCounters) minus(o groupCounters) groupCounters {
	sub := func(a, b uint64) uint64 {
		if a < b { // FLUSH STATUS or a restart reset them
			return 0
		}
		return a - b
	}
	return groupCounters{sub(c.commits, o.commits), sub(c.groups, o.groups)}
}

// nextWaitCount is the binlog_commit_wait_count for the next period, given
// the current one (0: no wait) and what the groups of the last period did.
func nextWaitCount(cur int, d groupCounters) int {
	if d.groups < groupWaitMinGroups {
		return 0 // idle or a trickle: a lone commit would wait for nobody
	}
	size := float64(d.commits) / float64(d.groups)
	need := groupWaitStartSize
	if cur > 0 {
		need = groupWaitKeepSize
	}
	if size < need {
		return 0 // one client at a time: a wait would only delay it
	}
	return min(int(math.Ceil(groupWaitReach*size))+1, groupWaitMaxCount)
}

// tuneGroupCommit runs nextWaitCount and nextWaitUsec every
// groupWaitPeriod until ctx ends (the master's capture stops), then turns
// the wait off. most is group_commit_wait; acks reads capture's ACK
// counters. A failed query skips a period: the stream and the monitor
// judge the server.
func (n *Node) tuneGroupCommit(ctx context.Context, db *sql.DB, most time.Duration, acks func() ackTimes) {
	set := func(ctx context.Context, w waitSetting) error {
		_, err := db.ExecContext(ctx, fmt.Sprintf("SET GLOBAL binlog_commit_wait_usec=%d, GLOBAL binlog_commit_wait_count=%d", w.usec.Microseconds(), w.count))
		if err == nil {
			n.commitWaitCount.Store(int64(w.count))
			if w.count == 0 {
				n.commitWaitUsec.Store(0) // MariaDB ignores the usec then
			} else {
				n.commitWaitUsec.Store(w.usec.Microseconds())
			}
		}
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := set(rctx, waitSetting{usec: nextWaitUsec(0, ackTimes{}, most)}); err != nil {
			n.log.Debug("group commit wait not turned off (a replica turns it off too)", "err", err)
		}
	}()
	t := time.NewTicker(groupWaitPeriod)
	defer t.Stop()
	var (
		cur      waitSetting
		known    bool
		last     groupCounters
		lastAcks ackTimes
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		qctx, cancel := context.WithTimeout(ctx, groupWaitPeriod)
		now, err := readGroupCounters(qctx, db)
		nowAcks := acks()
		if err == nil && !known {
			// Start from no wait, whatever a crash or a failed period
			// left, and count from there.
			w := waitSetting{usec: nextWaitUsec(0, ackTimes{}, most)}
			if err = set(qctx, w); err == nil {
				cur = w
			}
		}
		if err != nil {
			cancel()
			known = false
			n.log.Debug("group commit tuning skipped a period", "err", err)
			continue
		}
		if known {
			next := waitSetting{count: nextWaitCount(cur.count, now.minus(last)), usec: cur.usec}
			if next.count > 0 {
				next.usec = nextWaitUsec(cur.usec, nowAcks.minus(lastAcks), most)
			}
			if next != cur {
				if err := set(qctx, next); err != nil {
					// MariaDB may have run it all the same: start over.
					cancel()
					known = false
					n.log.Debug("group commit tuning skipped a period", "err", err)
					continue
				}
				cur = next
			}
		}
		cancel()
		last, lastAcks, known = now, nowAcks, true
	}
}

// turnOffGroupWait makes a replica's commits wait for nobody. Its
// parallel workers do not end a group's wait (they wait for the prior
// commit, not for a lock), so a count left by a master term made a
// replica apply a backlog about 4x slower (review: 800 transactions,
// 0.135 s without, 0.612 s with a count of 25 and 2 ms).
func (n *Node) turnOffGroupWait(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, "SET GLOBAL binlog_commit_wait_count=0"); err != nil {
		return err
	}
	n.commitWaitCount.Store(0)
	n.commitWaitUsec.Store(0)
	return nil
}

func readGroupCounters(ctx context.Context, db *sql.DB) (groupCounters, error) {
	rows, err := db.QueryContext(ctx, `SHOW GLOBAL STATUS WHERE Variable_name IN ('Binlog_commits', 'Binlog_group_commits')`)
	if err != nil {
		return groupCounters{}, err
	}
	defer rows.Close()
	var c groupCounters
	seen := 0
	for rows.Next() {
		var name, val string
		if err := rows.Scan(&name, &val); err != nil {
			return groupCounters{}, err
		}
		v, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			return groupCounters{}, fmt.Errorf("%s=%q: %w", name, val, err)
		}
		switch strings.ToLower(name) {
		case "binlog_commits":
			c.commits = v
		case "binlog_group_commits":
			c.groups = v
		default:
			continue
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return groupCounters{}, err
	}
	if seen != 2 {
		return groupCounters{}, fmt.Errorf("group commit status: %d of 2 counters", seen)
	}
	return c, nil
}
