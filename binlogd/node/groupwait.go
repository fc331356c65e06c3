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
// binlog_commit_wait_usec to group_commit_wait, so a group's leader waits
// that long at most for more transactions before writing the group.
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
)

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

// tuneGroupCommit runs nextWaitCount every groupWaitPeriod until ctx ends
// (the master's capture stops), then turns the wait off. A failed query
// skips a period: the stream and the monitor judge the server.
func (n *Node) tuneGroupCommit(ctx context.Context, db *sql.DB, usec time.Duration) {
	set := func(ctx context.Context, count int) error {
		_, err := db.ExecContext(ctx, fmt.Sprintf("SET GLOBAL binlog_commit_wait_usec=%d, GLOBAL binlog_commit_wait_count=%d", usec.Microseconds(), count))
		if err == nil {
			n.commitWaitCount.Store(int64(count))
		}
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := set(rctx, 0); err != nil {
			n.log.Debug("group commit wait not turned off (a replica turns it off too)", "err", err)
		}
	}()
	t := time.NewTicker(groupWaitPeriod)
	defer t.Stop()
	cur, known := 0, false
	var last groupCounters
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		qctx, cancel := context.WithTimeout(ctx, groupWaitPeriod)
		now, err := readGroupCounters(qctx, db)
		if err == nil && !known {
			// Start from no wait, whatever a crash or a failed period
			// left, and count from there.
			if err = set(qctx, 0); err == nil {
				cur = 0
			}
		}
		if err != nil {
			cancel()
			known = false
			n.log.Debug("group commit tuning skipped a period", "err", err)
			continue
		}
		if known {
			if next := nextWaitCount(cur, now.minus(last)); next != cur {
				if err := set(qctx, next); err != nil {
					n.log.Debug("group commit tuning skipped a period", "err", err)
				} else {
					cur = next
				}
			}
		}
		cancel()
		last, known = now, true
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
