package role

import (
	"context"
	"database/sql"
	"fmt"

	"phxgo/binlogd/binlog"
)

// Positions are a server's GTID positions in the one domain: its binlog's
// (@@gtid_binlog_pos), the replicated transactions InnoDB committed
// (@@gtid_slave_pos, kept in an InnoDB table with each transaction).
type Positions struct {
	Binlog, Slave binlog.GTID
}

// ReadPositions reads the binlog and slave positions.
func ReadPositions(ctx context.Context, db *sql.DB) (Positions, error) {
	var b, s string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_slave_pos").Scan(&b, &s); err != nil {
		return Positions{}, fmt.Errorf("role: read GTID positions: %w", err)
	}
	var p Positions
	for _, x := range []struct {
		s   string
		out *binlog.GTID
	}{{b, &p.Binlog}, {s, &p.Slave}} {
		l, err := binlog.ParseGTIDList(x.s)
		if err != nil {
			return Positions{}, err
		}
		if len(l) > 1 {
			return Positions{}, fmt.Errorf("%w: %s", ErrSeveralDomains, x.s)
		}
		if len(l) == 1 {
			*x.out = l[0]
		}
	}
	return p, nil
}

// Consistent reports whether a server with these positions has a binlog
// that agrees with InnoDB: its last binlogged transaction is the last
// replicated one, or one of its own (server id self, from a term it was
// master in) at or after it.
func (p Positions) Consistent(self uint32) bool {
	if p.Binlog == p.Slave {
		return true
	}
	return p.Binlog.Server == self && p.Binlog.Domain == p.Slave.Domain && p.Binlog.Seq >= p.Slave.Seq ||
		p.Slave.IsZero() && p.Binlog.Server == self
}

// ResyncBinlog repairs a relaxed replica after its host crashed. Without
// fsyncs, the binlog and InnoDB lose different tails: a binlog ahead of
// InnoDB makes re-applying the lost transactions fail (gtid_strict_mode:
// out-of-order sequence number), and a binlog behind it makes the server
// unable to serve capture from the log's position once promoted. InnoDB's
// gtid_slave_pos is the truth (it commits with each transaction), so the
// binlog is reset to it: RESET MASTER, then gtid_binlog_state = slave pos.
// Replication then re-fetches everything after it from the node's own
// endpoint (MASTER_USE_GTID=current_pos, which is the slave pos now).
//
// Call it with replication stopped and read_only on, before the server
// takes any write. It does nothing when the positions agree (a SIGKILL of
// mariadbd loses nothing from the OS cache) and refuses when InnoDB
// records no replicated position at all (nothing to trust).
func ResyncBinlog(ctx context.Context, db *sql.DB, self uint32) (before Positions, changed bool, err error) {
	p, err := ReadPositions(ctx, db)
	if err != nil {
		return p, false, err
	}
	if p.Consistent(self) {
		return p, false, nil
	}
	if p.Slave.IsZero() {
		return p, false, fmt.Errorf("role: binlog at %s but no replicated position in InnoDB: cannot tell what the host crash lost (reseed this node)", p.Binlog)
	}
	for _, s := range []string{
		"STOP SLAVE",
		"RESET MASTER",
		fmt.Sprintf("SET GLOBAL gtid_binlog_state='%s'", p.Slave),
	} {
		if err := exec(ctx, db, s); err != nil {
			return p, false, err
		}
	}
	return p, true, nil
}
