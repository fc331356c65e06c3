package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phxgo/wal"
)

// stdout runs fn with os.Stdout captured.
func stdout(t *testing.T, fn func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	err = fn()
	os.Stdout = old
	w.Close()
	return <-done, err
}

// TestWALRepairCommand: on a healthy log it says so; on a log with a
// flipped byte it reports the file, the offset and what follows, changes
// nothing without -truncate-at-offset and -yes, and refuses a cut under
// what Badger already holds (that needs a reseed, which it prints).
func TestWALRepairCommand(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "binlogd.json")
	cfg := `{"id":1,"insecure_no_tls":true,"dir":"n1","mysql_dir":"n1/mysql","credentials_file":"cred.json",
 "members":[
  {"id":1,"grpc_addr":"127.0.0.1:1","mysql_addr":"127.0.0.1:2","repl_addr":"127.0.0.1:3"},
  {"id":2,"grpc_addr":"127.0.0.1:4","mysql_addr":"127.0.0.1:5","repl_addr":"127.0.0.1:6"},
  {"id":3,"grpc_addr":"127.0.0.1:7","mysql_addr":"127.0.0.1:8","repl_addr":"127.0.0.1:9"}]}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "n1", "paxos")
	l, err := wal.Open(pdir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 20; i++ {
		p := wal.Ballot{Round: i, Node: 1}
		if err := l.Save(wal.Update{Promised: &p, Accepted: []wal.Accepted{{Index: i, Ballot: p, Value: []byte(fmt.Sprintf("command-%03d", i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := stdout(t, func() error { return cmdWALRepair([]string{"-config", cfgPath}) })
	if err != nil || !strings.Contains(out, "no damage") {
		t.Fatalf("healthy log: %v\n%s", err, out)
	}

	segs, _ := filepath.Glob(filepath.Join(pdir, "*.seg"))
	var seg string
	for _, s := range segs {
		if b, _ := os.ReadFile(s); bytes.Contains(b, []byte("command-006")) {
			seg = s
		}
	}
	b, _ := os.ReadFile(seg)
	b[bytes.Index(b, []byte("command-006"))+4] ^= 1
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = stdout(t, func() error { return cmdWALRepair([]string{"-config", cfgPath}) })
	if err == nil || !strings.Contains(out, "DAMAGE") || !strings.Contains(out, seg) || !strings.Contains(out, "valid frames follow") ||
		!strings.Contains(out, "Badger already holds") || !strings.Contains(out, "members remove") {
		t.Fatalf("damaged log: %v\n%s", err, out)
	}
	out, err = stdout(t, func() error { return cmdWALRepair([]string{"-config", cfgPath, "-truncate-at-offset", "0"}) })
	if err == nil || !strings.Contains(out, "WARNING") || !strings.Contains(err.Error(), "-yes") {
		t.Fatalf("cut without -yes: %v\n%s", err, out)
	}
	_, err = stdout(t, func() error { return cmdWALRepair([]string{"-config", cfgPath, "-truncate-at-offset", "0", "-yes"}) })
	if !errors.Is(err, wal.ErrInvalid) {
		t.Fatalf("cut under Badger's references: %v, want wal.ErrInvalid", err)
	}
	if after, _ := os.ReadFile(seg); !bytes.Equal(after, b) {
		t.Fatal("a refused repair changed the segment")
	}
}

// stoppedWALNode writes a config and a closed log of 20 promises and values
// chosen (Badger holds them all after the clean close) and returns the config's
// path and the log's directory.
func stoppedWALNode(t *testing.T) (cfgPath, pdir string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath = filepath.Join(dir, "binlogd.json")
	cfg := `{"id":1,"insecure_no_tls":true,"dir":"n1","mysql_dir":"n1/mysql","credentials_file":"cred.json",
 "members":[
  {"id":1,"grpc_addr":"127.0.0.1:1","mysql_addr":"127.0.0.1:2","repl_addr":"127.0.0.1:3"},
  {"id":2,"grpc_addr":"127.0.0.1:4","mysql_addr":"127.0.0.1:5","repl_addr":"127.0.0.1:6"},
  {"id":3,"grpc_addr":"127.0.0.1:7","mysql_addr":"127.0.0.1:8","repl_addr":"127.0.0.1:9"}]}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	pdir = filepath.Join(dir, "n1", "paxos")
	l, err := wal.Open(pdir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 20; i++ {
		p := wal.Ballot{Round: i, Node: 1}
		if err := l.Save(wal.Update{Promised: &p, Chosen: i, Accepted: []wal.Accepted{{Index: i, Ballot: p, Value: []byte(fmt.Sprintf("command-%03d", i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return cfgPath, pdir
}

// TestWALRepairDamageUnderCheckpoint: the newest segment cut short, or
// zeroed, under what Badger holds is damage (the node cannot start, or
// cannot read its log), not a torn tail: wal-repair fails with the
// reseed procedure, and 'binlogd log' (which opens and reads the log as
// run does) points to wal-repair.
func TestWALRepairDamageUnderCheckpoint(t *testing.T) {
	for name, damage := range map[string]func(string) error{
		"cut": func(seg string) error { fi, _ := os.Stat(seg); return os.Truncate(seg, fi.Size()/2) },
		"zeroed": func(seg string) error {
			b, _ := os.ReadFile(seg)
			return os.WriteFile(seg, make([]byte, len(b)), 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfgPath, pdir := stoppedWALNode(t)
			segs, _ := filepath.Glob(filepath.Join(pdir, "*.seg"))
			var seg string
			for _, s := range segs {
				if fi, _ := os.Stat(s); fi.Size() > 0 {
					seg = s
				}
			}
			if err := damage(seg); err != nil {
				t.Fatal(err)
			}
			out, err := stdout(t, func() error { return cmdWALRepair([]string{"-config", cfgPath}) })
			if err == nil || strings.Contains(out, "no damage") || !strings.Contains(out, "DAMAGE") || !strings.Contains(out, seg) ||
				!strings.Contains(out, "members remove") {
				t.Fatalf("wal-repair: %v\n%s", err, out)
			}
			_, err = stdout(t, func() error { return cmdLog([]string{"-config", cfgPath}) })
			if !errors.Is(err, wal.ErrCorrupt) || !strings.Contains(err.Error(), "wal-repair -config "+cfgPath) {
				t.Fatalf("log: %v; want ErrCorrupt and a pointer to wal-repair", err)
			}
		})
	}
}

// TestWALRepairDamagedTable: a Badger table file cut short made Badger
// panic (wal-repair, log and run all crashed with a stack trace); now
// wal-repair reports damage with the reseed, and log an error.
func TestWALRepairDamagedTable(t *testing.T) {
	cfgPath, pdir := stoppedWALNode(t)
	tables, _ := filepath.Glob(filepath.Join(pdir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table file after a clean close")
	}
	if err := os.Truncate(tables[0], 100); err != nil {
		t.Fatal(err)
	}
	out, err := stdout(t, func() error { return cmdWALRepair([]string{"-config", cfgPath}) })
	if err == nil || !strings.Contains(out, "DAMAGE") || !strings.Contains(out, tables[0]) || !strings.Contains(out, "members remove") {
		t.Fatalf("wal-repair: %v\n%s", err, out)
	}
	_, err = stdout(t, func() error { return cmdLog([]string{"-config", cfgPath}) })
	if !errors.Is(err, wal.ErrCorrupt) || !strings.Contains(err.Error(), tables[0]) || !strings.Contains(err.Error(), "wal-repair") {
		t.Fatalf("log: %v; want ErrCorrupt naming %s", err, tables[0])
	}
}

// TestLogWritesNothing: 'binlogd log' inspects a stopped node's log
// without changing a byte of it (it opened the log read-write, which
// rewrote Badger's files).
func TestLogWritesNothing(t *testing.T) {
	cfgPath, pdir := stoppedWALNode(t)
	hash := func() map[string]string {
		out := map[string]string{}
		ents, _ := os.ReadDir(pdir)
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(pdir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = string(b)
		}
		return out
	}
	before := hash()
	// The test's values are not binlogd commands: log stops at the first
	// with an error, after opening and reading the log.
	_, _ = stdout(t, func() error { return cmdLog([]string{"-config", cfgPath}) })
	after := hash()
	if len(after) != len(before) {
		t.Fatalf("files before %d, after %d", len(before), len(after))
	}
	for name, b := range before {
		if after[name] != b {
			t.Errorf("binlogd log changed %s", name)
		}
	}
}

// TestWALRepairDamagedMembership: a damaged paxos-membership (the
// node's list of voters) passed wal-repair before; now it is DAMAGE with
// the reseed. (The checksum that catches flips that still decode is
// tested in package paxos.)
func TestWALRepairDamagedMembership(t *testing.T) {
	cfgPath, pdir := stoppedWALNode(t)
	path := filepath.Join(pdir, "paxos-membership")
	if err := os.WriteFile(path, []byte("PXM1\x05garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := stdout(t, func() error { return cmdWALRepair([]string{"-config", cfgPath}) })
	if err == nil || !strings.Contains(out, "DAMAGE") || !strings.Contains(out, path) || !strings.Contains(out, "members remove") {
		t.Fatalf("wal-repair: %v\n%s", err, out)
	}
}

// TestWALRepairMissingMembership: a paxos-membership the wal says was
// saved, and that is gone, is DAMAGE with the reseed (the node refuses
// to start without it); without that record, no file is no damage.
func TestWALRepairMissingMembership(t *testing.T) {
	cfgPath, pdir := stoppedWALNode(t)
	out, err := stdout(t, func() error { return cmdWALRepair([]string{"-config", cfgPath}) })
	if err != nil || !strings.Contains(out, "no damage") {
		t.Fatalf("no membership file, none recorded: %v\n%s", err, out)
	}
	l, err := wal.Open(pdir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Save(wal.Update{MarkMembership: true}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(pdir, "paxos-membership")
	out, err = stdout(t, func() error { return cmdWALRepair([]string{"-config", cfgPath}) })
	if err == nil || !strings.Contains(out, "DAMAGE") || !strings.Contains(out, path) || !strings.Contains(out, "missing") ||
		!strings.Contains(out, "members remove") {
		t.Fatalf("wal-repair: %v\n%s", err, out)
	}
}
