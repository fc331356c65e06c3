package mysqld

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The error log of jepsen TestJepsenPowerShort seed 1 (session 14): a
// power loss during InnoDB's crash recovery left a redo log MariaDB 10.11
// refuses on every start. It must read as unrecoverable, naming the cause;
// a port in use must not (the next start may well succeed).
func TestUnrecoverableIn(t *testing.T) {
	for _, c := range []struct {
		file string
		want string // "" = retryable
	}{
		{"unrecoverable-power-loss.log", "InnoDB: Missing FILE_CREATE, FILE_DELETE or FILE_MODIFY before FILE_CHECKPOINT for tablespace 5"},
		{"port-in-use.log", ""},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		err = unrecoverableIn(b)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v, want retryable", c.file, err)
			}
			continue
		}
		if !errors.Is(err, ErrUnrecoverable) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrUnrecoverable ending %q", c.file, err, c.want)
		}
	}
}

// Only the lines of this start count: an old corruption earlier in the
// log (since repaired by a reseed) must not condemn a start that failed
// for another reason.
func TestLogSinceReadsOneStart(t *testing.T) {
	dir := t.TempDir()
	i := &Instance{opts: Options{Dir: dir}}
	old, _ := os.ReadFile(filepath.Join("testdata", "unrecoverable-power-loss.log"))
	if err := os.WriteFile(i.ErrorLog(), old, 0o644); err != nil {
		t.Fatal(err)
	}
	from := i.logSize()
	f, err := os.OpenFile(i.ErrorLog(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	now, _ := os.ReadFile(filepath.Join("testdata", "port-in-use.log"))
	f.Write(now)
	f.Close()
	if got := i.logSince(from); string(got) != string(now) {
		t.Fatalf("logSince = %q, want this start's lines", got)
	}
	if err := unrecoverableIn(i.logSince(from)); err != nil {
		t.Fatalf("a start failing on its port read as %v", err)
	}
	if err := unrecoverableIn(i.logSince(0)); !errors.Is(err, ErrUnrecoverable) {
		t.Fatalf("the whole log: %v, want ErrUnrecoverable", err)
	}
}
