package failover

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

// Errors.
var (
	ErrNotMeasured = errors.New("failover: a part was not measured")
	ErrConfig      = errors.New("failover: bad options")
)

// Options of one measurement.
type Options struct {
	Threads int           // insert clients (64 for the figure)
	Poll    time.Duration // Status polling interval (50 ms)
	Warmup  int64         // acks before the kill, so the load is steady
	Timeout time.Duration // from the kill to giving up on a part
	// After is how long the load keeps going after the first write, so
	// AcksAfter shows the new master's pace.
	After time.Duration
}

// DefaultOptions are the issue's: 64 threads, 50 ms polls.
func DefaultOptions() Options {
	return Options{Threads: 64, Poll: 50 * time.Millisecond, Warmup: 500, Timeout: 2 * time.Minute, After: time.Second}
}

// Validate checks the options.
func (o Options) Validate() error {
	switch {
	case o.Threads < 1:
		return fmt.Errorf("%w: threads %d < 1", ErrConfig, o.Threads)
	case o.Poll <= 0:
		return fmt.Errorf("%w: poll %v <= 0", ErrConfig, o.Poll)
	case o.Timeout <= 0:
		return fmt.Errorf("%w: timeout %v <= 0", ErrConfig, o.Timeout)
	}
	return nil
}

// Setup creates the table the load inserts into, through master's proxy.
func Setup(ctx context.Context, c *localcluster.Cluster, master uint32) error {
	db, err := c.AppDB(c.ProxyAddr(master))
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS app_failover",
		"CREATE TABLE IF NOT EXISTS app_failover.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, thread INT NOT NULL)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("failover setup: %s: %w", q, err)
		}
	}
	return nil
}

// procs are what a node runs; the kill takes all of them at once, as a
// host crash does (without losing the page cache).
var procs = []string{"sqlproxy", "binlogd", "mariadbd"}

// Measure runs the insert load on a healthy cluster whose master is
// master, SIGKILLs every process of the master, and times the parts of
// the failover by polling the surviving binlogds' Status every o.Poll.
// The killed node stays down; the caller restarts it (StartNode) for
// another round. The error says which part was not seen in o.Timeout.
func Measure(ctx context.Context, c *localcluster.Cluster, master uint32, o Options) (Parts, error) {
	p := Parts{OldMaster: master, Lease: c.Spec.LeaseDuration, Threads: o.Threads}
	if err := o.Validate(); err != nil {
		return p, err
	}
	var survivors []uint32
	for _, id := range c.IDs() {
		if id != master {
			survivors = append(survivors, id)
		}
	}
	old, err := c.Status(ctx, master)
	if err != nil {
		return p, fmt.Errorf("failover: master's status: %w", err)
	}
	l, err := startLoad(c, o.Threads)
	if err != nil {
		return p, err
	}
	defer l.stop()
	for l.acks.Load() < o.Warmup {
		if ctx.Err() != nil {
			return p, ctx.Err()
		}
		time.Sleep(o.Poll)
	}

	var pids []int
	for _, proc := range procs {
		if pid := c.Pid(master, proc); pid != 0 {
			pids = append(pids, pid)
		}
	}
	kill := time.Now()
	l.markKill(kill)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	p.AcksBefore = l.acksAtKill.Load()
	slog.Info("failover: killed the master", "node", master, "pids", pids, "acks", p.AcksBefore)

	deadline := time.NewTimer(o.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	for p.Promoted == 0 || p.FirstWrite == 0 {
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-deadline.C:
			return p, p.Measured()
		case <-tick.C:
		}
		// Each moment is stamped when the poll that saw it was sent: the
		// event happened before, within one poll of it.
		at := time.Since(kill)
		for _, id := range survivors {
			st, err := c.Status(ctx, id)
			if err != nil {
				continue
			}
			newTerm := st.Epoch > old.Epoch && st.MasterId != 0 && st.MasterId != master
			if p.Detected == 0 && (st.LeaseRemainingNs == 0 || st.MasterId != master || st.Role == pb.Role_ROLE_CANDIDATE) {
				p.Detected = at
			}
			if p.Elected == 0 && newTerm {
				p.Elected, p.NewMaster = at, st.MasterId
				p.Detected = min(p.Detected, at)
			}
			caughtUp := st.LastValidGtid != "" && st.MysqlGtidPos == st.LastValidGtid
			if p.Applied == 0 && p.NewMaster == id && (caughtUp || st.Role == pb.Role_ROLE_MASTER) {
				p.Applied = at
			}
			if p.Promoted == 0 && p.NewMaster == id && st.Role == pb.Role_ROLE_MASTER {
				p.Promoted = at
			}
		}
		if p.FirstWrite == 0 {
			p.FirstWrite = l.firstWrite()
		}
	}
	// The first write is stamped by the client, between polls: the
	// promotion it needed was seen at the next poll at the latest, so
	// it is stamped with the write (a poll stamped at 3,802 ms saw the
	// promotion that a write acknowledged at 3,796 ms needed).
	p.Promoted = min(p.Promoted, p.FirstWrite)
	p.Applied = min(p.Applied, p.Promoted)
	p.Elected = min(p.Elected, p.Applied)
	p.Detected = min(p.Detected, p.Elected)
	time.Sleep(o.After)
	l.stop()
	p.AcksAfter = l.acks.Load() - p.AcksBefore
	p.ServingLog = servingLogged(c, p.NewMaster, kill)
	return p, p.Measured()
}

// servingLogged finds the new master's "serving writes as master" line
// after the kill in its binlogd.log and returns its time since the kill
// (0 if there is none).
func servingLogged(c *localcluster.Cluster, id uint32, kill time.Time) time.Duration {
	if id == 0 {
		return 0
	}
	f, err := os.Open(filepath.Join(c.Spec.NodeDir(int(id)), "binlogd.log"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "serving writes as master" || line.Time.Before(kill) {
			continue
		}
		return line.Time.Sub(kill)
	}
	return 0
}
