package capture

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/mysqld"
)

var genTestdata = flag.Bool("capture.gen-testdata", false, "regenerate testdata/binlog.000001 and the fuzz seed corpus from a real mariadbd")

// goldenStatements produce every kind of event group the grouper knows.
var goldenStatements = []string{
	"CREATE DATABASE d",
	"CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
	"CREATE TABLE d.m (id INT) ENGINE=MyISAM",
	"INSERT INTO d.t VALUES (1, 'a')",
	"BEGIN", "INSERT INTO d.t VALUES (2, 'b'), (3, 'c')", "UPDATE d.t SET v='z' WHERE id=2", "DELETE FROM d.t WHERE id=3", "COMMIT",
	"INSERT INTO d.m VALUES (1)", // non-transactional: ends with a COMMIT query
	"XA START 'x1'", "INSERT INTO d.t VALUES (4, 'xa')", "XA END 'x1'", "XA PREPARE 'x1'", "XA COMMIT 'x1'",
	"ALTER TABLE d.t ADD COLUMN w INT",
	"DROP TABLE d.m",
	"FLUSH BINARY LOGS",
}

// goldenGroups is how many event groups goldenStatements write.
const goldenGroups = 10

func TestGenTestdata(t *testing.T) {
	if !*genTestdata {
		t.Skip("run with -capture.gen-testdata to regenerate")
	}
	inst := mysqld.NewTestInstance(t, 1)
	db := inst.TestDB(t)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range goldenStatements {
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(inst.DataDir(), "binlog.000001"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/binlog.000001", raw, 0o644); err != nil {
		t.Fatal(err)
	}
	stream := goldenStream(t, raw, true)
	dir := filepath.Join("testdata", "fuzz", "FuzzStream")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"golden": stream, "head": stream[:len(stream)/3], "empty": nil} {
		if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeRotate builds the ROTATE a master sends first, with its CRC32.
func fakeRotate(name string) []byte {
	ev := make([]byte, binlog.HeaderLen, binlog.HeaderLen+8+len(name)+4)
	ev[4] = 4 // ROTATE_EVENT
	binary.LittleEndian.PutUint32(ev[5:], 1)
	ev = binary.LittleEndian.AppendUint64(ev, 4)
	ev = append(ev, name...)
	binary.LittleEndian.PutUint32(ev[9:], uint32(len(ev)+4))
	binary.LittleEndian.PutUint16(ev[17:], 0x20) // LOG_EVENT_ARTIFICIAL_F
	return binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
}

// goldenStream renders a binlog file as the semi-sync dump packets a
// master sends for it, framed for FuzzStream as [u32 len][payload]...
// With ackEnds, the last event of every group asks for an ACK.
func goldenStream(t testing.TB, file []byte, ackEnds bool) []byte {
	t.Helper()
	if !bytes.HasPrefix(file, []byte("\xfebin")) {
		t.Fatal("not a binlog file")
	}
	evs, err := binlog.SplitEvents(file[4:])
	if err != nil {
		t.Fatal(err)
	}
	// Which events end a group: found by a grouper pass without flags.
	ends := map[int]bool{}
	g := newGrouper()
	if _, err := g.feed(fakeRotate("binlog.000001"), false); err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		u, err := g.feed(ev, false)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		ends[i] = u != nil
	}
	var out []byte
	add := func(ev []byte, ack bool) {
		flag := byte(0)
		if ack {
			flag = semiSyncNeedAck
		}
		p := append([]byte{0, semiSyncMagic, flag}, ev...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	add(fakeRotate("binlog.000001"), false)
	for i, ev := range evs {
		add(ev, ackEnds && ends[i])
	}
	return out
}

// splitFuzzPackets undoes goldenStream's framing.
func splitFuzzPackets(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 4 {
		n := int(binary.LittleEndian.Uint32(b))
		b = b[4:]
		if n > len(b) {
			n = len(b)
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// TestGrouperGolden: a real binlog (DDL, multi-statement, MyISAM, XA,
// rotate) cuts into exactly its event groups, each ending where the
// master would ask for the ACK.
func TestGrouperGolden(t *testing.T) {
	g := newGrouper()
	units := goldenUnits(t, g)
	if len(units) != goldenGroups {
		t.Fatalf("%d groups, want %d", len(units), goldenGroups)
	}
	for i, u := range units {
		if !u.needAck {
			t.Fatalf("unit %v lost its ACK flag", u.txn.GTID)
		}
		checkUnit(t, u)
		if u.txn.GTID.Seq != uint64(i+1) || u.end.File != "binlog.000001" {
			t.Fatalf("unit %d: %v at %v", i, u.txn.GTID, u.end)
		}
		if i > 0 && !units[i-1].end.less(u.end) {
			t.Fatalf("positions not increasing: %v then %v", units[i-1].end, u.end)
		}
	}
	if g.file != "binlog.000002" {
		t.Fatalf("after the real ROTATE the file is %q", g.file)
	}
	// A flag on an event that ends no group is a grouping bug: refused.
	file, err := os.ReadFile("testdata/binlog.000001")
	if err != nil {
		t.Fatal(err)
	}
	g = newGrouper()
	for i, p := range splitFuzzPackets(goldenStream(t, file, false)) {
		ev, _, _ := parseDumpPacket(p)
		typ := ev[4]
		if _, err := g.feed(ev, typ == 19 /* TABLE_MAP */); err != nil {
			if typ != 19 {
				t.Fatalf("packet %d: %v", i, err)
			}
			return
		}
	}
	t.Fatal("ACK flag on a TABLE_MAP event accepted")
}

// checkUnit asserts a unit's wire shape (binlog package doc).
func checkUnit(t testing.TB, u *unit) {
	evs, err := binlog.SplitEvents(u.txn.Events)
	if err != nil {
		t.Fatalf("unit %v: %v", u.txn.GTID, err)
	}
	if len(evs) < 2 || evs[0][4] != 162 {
		t.Fatalf("unit %v: %d events, first of type %d", u.txn.GTID, len(evs), evs[0][4])
	}
	last := evs[len(evs)-1]
	if uint64(binary.LittleEndian.Uint32(last[13:])) != u.end.Pos || u.end.File == "" {
		t.Fatalf("unit %v: end %v, last event log_pos %d", u.txn.GTID, u.end, binary.LittleEndian.Uint32(last[13:]))
	}
	for _, ev := range evs {
		n := len(ev) - 4
		if crc32.ChecksumIEEE(ev[:n]) != binary.LittleEndian.Uint32(ev[n:]) {
			t.Fatalf("unit %v: event without a valid CRC32 footer", u.txn.GTID)
		}
	}
}

// FuzzStream: arbitrary dump packets never crash the semi-sync prefix
// parser or the grouper, and whatever transaction comes out is whole.
func FuzzStream(f *testing.F) {
	if file, err := os.ReadFile("testdata/binlog.000001"); err == nil {
		f.Add(goldenStream(f, file, true))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g := newGrouper()
		for _, p := range splitFuzzPackets(b) {
			ev, ack, err := parseDumpPacket(p)
			if err != nil {
				return
			}
			u, err := g.feed(ev, ack)
			if err != nil {
				return
			}
			if u != nil {
				checkUnit(t, u)
			}
		}
	})
}

// FuzzAck: the ACK packet round-trips.
func FuzzAck(f *testing.F) {
	f.Add("binlog.000001", uint64(4))
	f.Fuzz(func(t *testing.T, name string, pos uint64) {
		if len(name) > 512 {
			return
		}
		got, err := decodeAck(encodeAck(Position{File: name, Pos: pos}))
		if err != nil || got != (Position{File: name, Pos: pos}) {
			t.Fatalf("%q %d -> %v %v", name, pos, got, err)
		}
	})
}
