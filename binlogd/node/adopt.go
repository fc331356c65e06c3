package node

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/mysqld"
	"phxgo/binlogd/recovery"
	"phxgo/binlogd/role"
	"phxgo/binlogd/rolectl"
)

// Keeping MariaDB up across a binlogd restart (issue 23.3).
//
// A graceful stop of a replica (or of a master that handed over first,
// handover.go) leaves its mariadbd running: read_only, replicating from
// this node's endpoint (which is down until the next binlogd serves it),
// no commit waiting, and a handoff record in binlogd's own directory
// naming the process (pid and start time) and the server (datadir, pid
// file, socket, port, server id). mariadbd cannot write that directory
// when binlogd runs as root, so a record is binlogd's word. The next start
// adopts that mariadbd only if:
//
//  1. the record exists (it is removed as it is read: used once),
//  2. the process is the one named, started with this node's my.cnf, and
//     the server on this node's socket says it is this node's, read-only,
//     with no commit waiting (mysqld.Adopt), and
//  3. its binlog holds nothing the log does not: with replication stopped,
//     the same question recovery asks (every local GTID chosen and
//     valid) must cut nothing. Only the OS user binlogd runs as can make
//     it writable while binlogd is down (client accounts hold neither
//     SUPER nor READ ONLY ADMIN); this catches a write that did. Such a
//     write is committed in InnoDB, where no cut undoes it: the server is
//     shut down cleanly and the node goes UNSAFE (reseed it).
//
// Anything else is a crash: a mariadbd left running without a record (a
// killed binlogd, a master that could not hand over) is SIGKILLed and
// recovered before it starts again, exactly as DESIGN.md's recovery path
// says. Under systemd, KillMode=process leaves mariadbd to binlogd for
// both cases (scripts/systemd).

// handoffFile is where a graceful stop records the mariadbd it left.
func (n *Node) handoffFile() string { return filepath.Join(n.cfg.Dir, "mysqld-handoff.json") }

// adoptOrKill adopts the mariadbd a graceful stop handed off, or kills one
// a crash left behind. It reports whether one was adopted.
func (n *Node) adoptOrKill(ctx context.Context) bool {
	h, ok, err := mysqld.TakeHandoff(n.handoffFile())
	if err != nil {
		n.log.Warn("handoff record unreadable; treating a running mariadbd as left by a crash", "err", err)
	}
	if ok && !mysqld.Alive(h.Pid) {
		// Stopped since (binlogd stop-mysql, a host reboot): nothing to
		// adopt, a normal start through recovery follows.
		n.log.Info("the mariadbd a graceful stop handed off has exited since; starting it through recovery", "pid", h.Pid)
	} else if ok {
		if err := n.inst.Adopt(ctx, h); err != nil {
			n.log.Warn("not adopting the running mariadbd; it is killed and recovered", "err", err)
		} else {
			return true
		}
	}
	if pid, err := n.inst.KillOrphan(30 * time.Second); err != nil {
		n.log.Error("killing the mariadbd a crashed binlogd left", "pid", pid, "err", err)
	} else if pid != 0 {
		n.log.Warn("binlogd did not stop gracefully: killed the mariadbd it left (SIGKILL); recovery runs before it starts", "pid", pid)
	}
	return false
}

// verifyAdopted asks the cluster whether the adopted server's binlog holds
// only chosen, valid transactions. Replication is stopped meanwhile so the
// binlog does not grow under the scan; it is started again after (the
// next repoint also re-asserts it). Any cut needed means it is not
// adoptable: the caller kills it and recovery cuts.
func (n *Node) verifyAdopted(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, "STOP SLAVE"); err != nil {
		return fmt.Errorf("STOP SLAVE: %w", err)
	}
	groups, err := recovery.Scan(n.inst.BinlogIndex())
	if err != nil && !strings.Contains(err.Error(), "no such file") {
		return err
	}
	if len(groups) > 0 {
		gtids := make([]binlog.GTID, len(groups))
		for i, g := range groups {
			gtids[i] = g.GTID
		}
		var valid []bool
		for {
			if valid, err = n.recoverPoint(ctx, n.cfg.ID, gtids); err == nil {
				break
			}
			n.log.Warn("adoption waits for the cluster to check the binlog", "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
		plan, err := recovery.MakePlan(groups, valid)
		if err != nil {
			return err
		}
		if len(plan.Cut) > 0 {
			return fmt.Errorf("%w: %w: %s", mysqld.ErrNotAdoptable, errAdoptedDiverged, plan)
		}
	}
	if _, err := db.ExecContext(ctx, "START SLAVE"); err != nil {
		n.log.Warn("START SLAVE after the adoption check; the repoint retries", "err", err)
	}
	return nil
}

// prepareAdopted is the adopted server's way in: the checks of verifyAdopted,
// read_only asserted, durable again (it may be a relaxed replica; the next
// repoint relaxes it again), the relaxed marker gone.
func (n *Node) prepareAdopted(ctx context.Context, db *sql.DB) error {
	if w, err := role.WaitingCommits(ctx, db); err != nil || w > 0 {
		return fmt.Errorf("%w: %d commits waiting (%v)", mysqld.ErrNotAdoptable, w, err)
	}
	if err := role.SetReadOnly(ctx, db); err != nil {
		return err
	}
	if err := n.verifyAdopted(ctx, db); err != nil {
		return err
	}
	if err := role.MakeDurable(ctx, db); err != nil {
		return err
	}
	n.ctl.relaxed.Store(false)
	if err := n.clearRelaxed(); err != nil {
		n.log.Warn("removing the relaxed marker", "err", err)
	}
	return nil
}

var (
	// errAdoptRefused: the adopted server failed prepareAdopted and was
	// killed; recovery runs before it starts again.
	errAdoptRefused = errors.New("binlogd: killed the adopted mariadbd; recovering it")
	// errAdoptedDiverged: the adopted server committed transactions the
	// log does not hold (written while no binlogd ran). They are in InnoDB
	// for good, so no binlog cut undoes them: the node must be reseeded.
	errAdoptedDiverged = errors.New("its binlog holds transactions the log does not (written while binlogd was down); reseed this node")
)

// refuseAdopted takes a refused adopted server out of the way. A diverged
// one is shut down gracefully (read-only, nothing waits, so that is safe)
// and the node goes UNSAFE: after a clean shutdown recovery refuses to cut
// (CutAfterCleanShutdown), so a later start cannot rejoin it either. Any
// other refusal kills it; recovery runs before the next start.
func (n *Node) refuseAdopted(ctx context.Context, err error) error {
	if errors.Is(err, errAdoptedDiverged) {
		n.log.Error("adopted mariadbd diverged from the log; stopping it, node UNSAFE", "err", err)
		if serr := n.inst.Shutdown(rolectl.GracefulStopTimeout); serr != nil {
			n.log.Error("mariadbd shutdown", "err", serr)
		}
		n.setUnsafe(err.Error())
		<-ctx.Done()
		return err
	}
	n.log.Warn("adopted mariadbd refused; killing it for recovery", "err", err)
	_ = n.inst.Kill()
	return fmt.Errorf("%w: %w", errAdoptRefused, err)
}
