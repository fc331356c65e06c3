package role

import (
	"context"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/mysqld"
)

func g(s string) binlog.GTID {
	x, err := binlog.ParseGTID(s)
	if err != nil {
		panic(err)
	}
	return x
}

func TestPositionsConsistent(t *testing.T) {
	for _, tc := range []struct {
		binlog, slave string
		want          bool
	}{
		{"", "", true},
		{"0-2-10", "0-2-10", true},
		{"0-1-50", "0-2-40", true},  // own transactions as master after the replicated ones
		{"0-1-50", "", true},        // never replicated
		{"0-2-12", "0-2-10", false}, // binlog ahead of InnoDB (foreign)
		{"0-2-8", "0-2-10", false},  // binlog behind InnoDB
		{"0-1-50", "0-2-55", false}, // own, then replicated ones the binlog lost
		{"", "0-2-10", false},
		{"0-2-10", "", false},
	} {
		p := Positions{Binlog: g(tc.binlog), Slave: g(tc.slave)}
		if got := p.Consistent(1); got != tc.want {
			t.Errorf("binlog %q slave %q: consistent=%v, want %v", tc.binlog, tc.slave, got, tc.want)
		}
	}
}

// A relaxed replica whose host crashed can come back with a binlog ahead
// of InnoDB (the binlog's page cache reached the disk, InnoDB's redo did
// not). Re-applying the lost transactions then fails under
// gtid_strict_mode; ResyncBinlog resets the binlog to InnoDB's slave pos,
// and the same transactions apply again. The crash's outcome is made by
// hand: the binlog holds a foreign GTID 0-7-10 that InnoDB's slave pos
// (0-7-5) does not.
func TestResyncBinlogAheadOfInnoDB(t *testing.T) {
	in := mysqld.NewTestInstance(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := in.TestDB(t)
	db.SetMaxOpenConns(1) // session variables below
	q := func(s string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := Relax(ctx, db); err != nil {
		t.Fatal(err)
	}
	if sb, fl, err := Durability(ctx, db); err != nil || sb != 0 || fl != 2 {
		t.Fatalf("relaxed: sync_binlog=%d flush=%d %v", sb, fl, err)
	}
	q("SET GLOBAL read_only=OFF")
	q("CREATE DATABASE x")
	q("CREATE TABLE x.t (i INT PRIMARY KEY)")
	q("SET SESSION server_id=7")
	q("SET SESSION gtid_seq_no=10")
	q("INSERT INTO x.t VALUES (10)")
	q("SET GLOBAL gtid_slave_pos='0-7-5'")
	q("SET SESSION server_id=1")

	before, changed, err := ResyncBinlog(ctx, db, 1)
	if err != nil || !changed || before.Binlog != g("0-7-10") || before.Slave != g("0-7-5") {
		t.Fatalf("resync: %+v changed=%v %v", before, changed, err)
	}
	p, err := ReadPositions(ctx, db)
	if err != nil || p.Binlog != g("0-7-5") || p.Slave != g("0-7-5") || !p.Consistent(1) {
		t.Fatalf("after resync: %+v %v", p, err)
	}
	if cur, err := Applied(ctx, db); err != nil || cur != g("0-7-5") {
		t.Fatalf("gtid_current_pos after resync: %v %v (replication resumes from it)", cur, err)
	}
	// The transactions after the slave pos apply again (as replication
	// would re-send them), in order, under strict mode.
	q("SET SESSION server_id=7")
	q("SET SESSION gtid_seq_no=6")
	q("INSERT INTO x.t VALUES (6)")
	q("SET SESSION server_id=1")
	q("SET GLOBAL gtid_slave_pos='0-7-6'") // what the SQL thread records with it
	// Consistent positions: nothing to do.
	if _, changed, err := ResyncBinlog(ctx, db, 1); err != nil || changed {
		t.Fatalf("second resync: changed=%v %v", changed, err)
	}
	if err := MakeDurable(ctx, db); err != nil {
		t.Fatal(err)
	}
	if sb, fl, err := Durability(ctx, db); err != nil || sb != 1 || fl != 1 {
		t.Fatalf("durable: sync_binlog=%d flush=%d %v", sb, fl, err)
	}
}
