package recovery

import (
	"database/sql"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
)

// Issue 20.4: MariaDB rotated (big transactions) past the point the log
// holds, then was killed. The cut lands in an older file the server had
// closed cleanly on rotation (in-use flag clear) and removes the newer ones.
// The cut must leave that file marked in use, or mariadbd skips its crash
// recovery and refuses to start with the cut transactions still prepared.
func TestCutIntoRotatedFileRollsBack(t *testing.T) {
	inst, ctx, db := startServer(t, 11, 3*time.Minute)
	before := threeRows(t, db)
	held, err := binlog.ParseGTID(before)
	if err != nil {
		t.Fatal(err)
	}
	cutFile := masterFile(t, db)
	// The first group the log does not hold, in cutFile. It cannot be a
	// commit waiting for its ACK: FLUSH BINARY LOGS waits behind those
	// (measured on 10.11). So it is a committed one, in a table of its own:
	// InnoDB keeps it whatever the cut does.
	mustExec(t, db, "CREATE TABLE r.u (id INT PRIMARY KEY) ENGINE=InnoDB")
	for i := 0; i < 2; i++ {
		mustExec(t, db, "FLUSH BINARY LOGS")
	}
	if masterFile(t, db) == cutFile {
		t.Fatal("FLUSH BINARY LOGS did not rotate")
	}
	// The commit prepared and waiting for its ACK, in the newest file.
	killPendingCommit(ctx, t, inst, db)

	groups, err := Scan(inst.BinlogIndex())
	if err != nil {
		t.Fatal(err)
	}
	valid := make([]bool, len(groups))
	for i, g := range groups {
		valid[i] = g.GTID.Seq <= held.Seq
	}
	plan, err := MakePlan(groups, valid)
	if err != nil {
		t.Fatal(err)
	}
	if plan.File != cutFile || len(plan.Cut) != 2 || plan.LastKept != held || plan.Cut[1] != groups[len(groups)-1].GTID {
		t.Fatalf("plan %v; log holds up to %s in %s", plan, before, cutFile)
	}
	if clean, err := ClosedCleanly(inst.BinlogIndex()); err != nil || clean {
		t.Fatalf("binlog after kill -9: clean=%v err=%v", clean, err)
	}
	if plan, err = Apply(inst.BinlogIndex(), plan); err != nil {
		t.Fatal(err)
	}
	t.Log(plan)
	if len(plan.Removed) != 2 {
		t.Fatalf("removed %v, want the 2 rotated files", plan.Removed)
	}
	files, err := Files(inst.BinlogIndex())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(files[len(files)-1]) != cutFile {
		t.Fatalf("index ends with %s, want %s", files[len(files)-1], cutFile)
	}

	// The flag is outside the FD event's CRC32 (MariaDB checksums it
	// with the flag clear), so setting it keeps the event valid.
	fdChecksumIgnoresInUse(t, filepath.Join(inst.DataDir(), cutFile))

	if err := inst.Start(ctx); err != nil {
		t.Fatal(err) // without markInUse: "Found 1 prepared transactions!"
	}
	cutRolledBack(t, db, before)
	// The cut file still ends at the cut: the server recovered from it and
	// opened the next file, appending nothing to it.
	st, err := os.Stat(filepath.Join(inst.DataDir(), cutFile))
	if err != nil || st.Size() != plan.Offset {
		t.Fatalf("%s after restart: %v %v, cut at %d", cutFile, st, err, plan.Offset)
	}
}

func masterFile(t *testing.T, db *sql.DB) string {
	t.Helper()
	var file, pos, doDB, ignoreDB string
	if err := db.QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, &doDB, &ignoreDB); err != nil {
		t.Fatal(err)
	}
	return file
}

// fdChecksumIgnoresInUse checks that path's FORMAT_DESCRIPTION event has the
// in-use flag set and a CRC32 that matches only with the flag cleared.
func fdChecksumIgnoresInUse(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := int(binary.LittleEndian.Uint32(data[4+9:]))
	ev := append([]byte(nil), data[4:4+size]...)
	if ev[17]&logInUse == 0 {
		t.Fatalf("%s: FD flags %#x, in-use not set", path, ev[17])
	}
	stored := binary.LittleEndian.Uint32(ev[size-4:])
	if crc32.ChecksumIEEE(ev[:size-4]) == stored {
		t.Fatalf("%s: FD checksum covers the in-use flag", path)
	}
	ev[17] &^= logInUse
	if crc32.ChecksumIEEE(ev[:size-4]) != stored {
		t.Fatalf("%s: FD checksum %#x matches neither flag value", path, stored)
	}
}
