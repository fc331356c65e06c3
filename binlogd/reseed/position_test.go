package reseed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPosition: the binlog info's GTID (the source's gtid_current_pos:
// everything in the copy) wins over the slave info's; the slave info is
// the fallback; garbage is an error, not a position.
func TestPosition(t *testing.T) {
	for _, tc := range []struct {
		name, binlog, slave, want, from, err string
	}{
		{"binlog info", "binlog.000002\t1234\t0-1-57\n", "SET GLOBAL gtid_slave_pos = '0-1-50';\nCHANGE MASTER TO master_use_gtid = slave_pos\n", "0-1-57", BinlogInfoFile, ""},
		{"two domains", "binlog.000002\t1234\t0-1-57,1-2-3\n", "", "0-1-57,1-2-3", BinlogInfoFile, ""},
		{"slave info only", "", "SET GLOBAL gtid_slave_pos = '0-3-9';\nCHANGE MASTER TO master_use_gtid = slave_pos\n", "0-3-9", SlaveInfoFile, ""},
		{"binlog info without gtid", "binlog.000001\t329\n", "", "", BinlogInfoFile, ""},
		{"garbage", "binlog.000001\t329\t'; DROP TABLE x\n", "", "", "", "not a GTID position"},
		{"nothing", "", "", "", "", "no GTID position"},
		// Positions MariaDB's SET GLOBAL gtid_slave_pos refuses, caught
		// before the swap (red-team pass, session 37).
		{"a domain twice", "binlog.000001\t329\t0-1-5,0-2-6\n", "", "", "", "names domain 0 twice"},
		{"sequence over 64 bits", "binlog.000001\t329\t0-1-99999999999999999999999\n", "", "", "", "out of range"},
		{"domain over 32 bits", "binlog.000001\t329\t99999999999-1-5\n", "", "", "", "out of range"},
		{"server over 32 bits in slave info", "", "SET GLOBAL gtid_slave_pos = '0-99999999999-5';\n", "", "", "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.binlog != "" {
				os.WriteFile(filepath.Join(dir, BinlogInfoFile), []byte(tc.binlog), 0o644)
			}
			if tc.slave != "" {
				os.WriteFile(filepath.Join(dir, SlaveInfoFile), []byte(tc.slave), 0o644)
			}
			pos, from, err := Position(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || pos != tc.want || from != tc.from {
				t.Fatalf("got %q from %q (%v), want %q from %q", pos, from, err, tc.want, tc.from)
			}
		})
	}
}

// TestProgressLine: bytes, percentage of the estimate (never 100% before
// the end), rate and ETA.
func TestProgressLine(t *testing.T) {
	p := &progress{estimated: 100 << 20, start: time.Unix(1000, 0)}
	p.bytes.Store(25 << 20)
	got := p.line(time.Unix(1005, 0))
	want := "reseed: 25.0 MiB of ~100.0 MiB (25%), 5.0 MiB/s, ETA 15s"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	p.bytes.Store(120 << 20) // past the estimate
	if got := p.line(time.Unix(1010, 0)); !strings.Contains(got, "(99%)") || !strings.Contains(got, "ETA 0s") {
		t.Fatalf("past the estimate: %q", got)
	}
}
