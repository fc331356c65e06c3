package replserver

import (
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"phxgo/binlogd/mysqld"
)

var captureFDE = flag.Bool("replserver.capture-fde", false, "rewrite "+fdeCaptureFile+" from the first event of a fresh MariaDB's binlog")

// TestCaptureFDE regenerates the captured FORMAT_DESCRIPTION event the
// endpoint takes its post-header table from (run with -replserver.capture-fde
// after a MariaDB upgrade).
func TestCaptureFDE(t *testing.T) {
	if !*captureFDE {
		t.Skip("use -replserver.capture-fde")
	}
	m := mysqld.NewTestInstance(t, 77)
	files, _ := filepath.Glob(filepath.Join(m.DataDir(), "*bin*.000001"))
	if len(files) != 1 {
		ents, _ := os.ReadDir(m.DataDir())
		t.Fatalf("binlog files: %v in %v", files, ents)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	size := binary.LittleEndian.Uint32(b[4+eventSizeOffset:])
	if err := os.WriteFile(fdeCaptureFile, b[4:4+size], 0o644); err != nil {
		t.Fatal(err)
	}
}
