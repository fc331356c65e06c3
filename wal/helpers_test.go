package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
)

func quietOptions() Options {
	return Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MemTableSize: minMemTableSize}
}

// applyAtOnce: each group goes into Badger when answered, for tests that
// look at or tamper with Badger itself after a Save.
func applyAtOnce() Options {
	o := quietOptions()
	o.ApplyGroups = 1
	return o
}

func openTest(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func val(i uint64) []byte { return []byte(fmt.Sprintf("value-%d", i)) }

func acc(i uint64, round uint64) Accepted {
	return Accepted{Index: i, Ballot: Ballot{Round: round, Node: 1}, Value: val(i)}
}

func mustSave(t testing.TB, l *Log, u Update) {
	t.Helper()
	if err := l.Save(u); err != nil {
		t.Fatalf("Save: %v", err)
	}
}

func equalAccepted(a, b Accepted) bool {
	return a.Index == b.Index && a.Ballot == b.Ballot && bytes.Equal(a.Value, b.Value)
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}
