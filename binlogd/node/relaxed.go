package node

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/role"
	"phxgo/internal/durable"
)

// Relaxed replicas (issue 19). A replica's MariaDB runs without its own
// fsyncs (sync_binlog=0, innodb_flush_log_at_trx_commit=2): the log is its
// durability. Three things make that safe:
//
//   - a marker file, synced before the server is relaxed and removed once
//     it is durable again, tells the next start that a host crash may have
//     cost the binlog and InnoDB different tails; that start repairs the
//     binlog from InnoDB's slave position (role.ResyncBinlog) before the
//     server replicates, and replication re-fetches the rest;
//   - the position this node reports to log retention is the one InnoDB
//     has synced (durableTracker), so the log keeps what a crash could
//     make the replica fetch again;
//   - a promotion makes the server durable and flushes it before writes
//     (rolectl MakeDurable).

// relaxedMarker is the marker's path.
func (n *Node) relaxedMarker() string { return filepath.Join(n.cfg.Dir, "mysql-relaxed") }

// markRelaxed makes the marker durable (file and directory entry) before
// the server is relaxed.
func (n *Node) markRelaxed() error {
	p := n.relaxedMarker()
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(p))
}

// clearRelaxed removes the marker once the server is durable and flushed.
func (n *Node) clearRelaxed() error {
	err := os.Remove(n.relaxedMarker())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(n.relaxedMarker()))
}

func (n *Node) wasRelaxed() bool {
	_, err := os.Stat(n.relaxedMarker())
	return err == nil
}

// resyncAfterRelaxed runs at a fresh mariadbd start (read_only,
// replication not started): if the server was relaxed when it stopped,
// its binlog is brought back in line with InnoDB.
func (n *Node) resyncAfterRelaxed(ctx context.Context, db *sql.DB) error {
	if !n.wasRelaxed() {
		return nil
	}
	before, changed, err := role.ResyncBinlog(ctx, db, n.cfg.ID)
	if err != nil {
		return err
	}
	if changed {
		n.log.Warn("relaxed replica's binlog and InnoDB disagreed after a crash; binlog reset to InnoDB's position, the rest is fetched again from the log",
			"binlog_was", before.Binlog.String(), "innodb_slave_pos", before.Slave.String())
		n.ctl.resyncs.Add(1)
	}
	return nil
}

// durableTracker follows which GTID position InnoDB has synced. A poll
// reads the position, then the redo log's current and flushed LSNs: the
// position's last commit is at or before the current LSN, so once the
// flushed LSN reaches it, the position survives a host crash.
type durableTracker struct {
	mu      sync.Mutex
	pending []lsnSample // oldest first
	durable binlog.GTID
	known   bool
}

type lsnSample struct {
	gtid binlog.GTID
	lsn  uint64
}

// maxLSNSamples bounds pending when the flushed LSN stalls.
const maxLSNSamples = 256

// reset starts over at a position known to be on disk (or unknown).
func (t *durableTracker) reset(g binlog.GTID, known bool) {
	t.mu.Lock()
	t.pending, t.durable, t.known = t.pending[:0], g, known
	t.mu.Unlock()
}

// observe records position g read before LSNs current and flushed.
func (t *durableTracker) observe(g binlog.GTID, current, flushed uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 || t.pending[len(t.pending)-1].gtid != g {
		t.pending = append(t.pending, lsnSample{g, current})
	}
	if len(t.pending) > maxLSNSamples {
		t.pending = append(t.pending[:0], t.pending[len(t.pending)/2:]...)
	}
	k := 0
	for k < len(t.pending) && t.pending[k].lsn <= flushed {
		t.durable, t.known = t.pending[k].gtid, true
		k++
	}
	t.pending = append(t.pending[:0], t.pending[k:]...)
}

// get returns the synced position; ok is false before one is known.
func (t *durableTracker) get() (binlog.GTID, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.durable, t.known
}

// readLSNs reads InnoDB's current and flushed redo LSNs.
func readLSNs(ctx context.Context, db *sql.DB) (current, flushed uint64, err error) {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_lsn_current', 'Innodb_lsn_flushed')")
	if err != nil {
		return 0, 0, fmt.Errorf("read InnoDB LSNs: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return 0, 0, err
		}
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("InnoDB status %s=%q: %w", k, v, err)
		}
		switch k {
		case "Innodb_lsn_current":
			current, n = x, n+1
		case "Innodb_lsn_flushed":
			flushed, n = x, n+1
		}
	}
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	if n != 2 {
		return 0, 0, errors.New("InnoDB LSN status variables missing")
	}
	return current, flushed, nil
}

// localDurable is the position this node's MariaDB has synced, when known.
func (n *Node) localDurable() (binlog.GTID, bool) {
	if !n.mysqlUp.Load() {
		return binlog.GTID{}, false
	}
	return n.ctl.durable.get()
}

// durableString is localDurable for the Admin status: "" for none applied,
// "0-0-0" while unknown (a peer's retention then keeps everything).
func (n *Node) durableString() string {
	g, ok := n.ctl.durable.get()
	if !ok {
		return "0-0-0"
	}
	return g.String()
}
