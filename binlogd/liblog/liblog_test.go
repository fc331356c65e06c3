package liblog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/grpclog"
)

// TestLibrariesLogAsJSON: after Install, the driver's and gRPC's
// messages come out as JSON records of the process logger, with lib set
// and gRPC's info demoted to debug.
func TestLibrariesLogAsJSON(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", 2)
	Install(l)
	t.Cleanup(func() { _ = mysql.SetLogger(nopLogger{}) })

	driverLogger{l.With("lib", "mysql")}.Print("packets.go:58 unexpected EOF")
	grpclog.Warningf("addrConn.createTransport failed: %s", "refused")
	grpclog.Info("state changed to READY") // debug: filtered at info

	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON record: %q: %v", line, err)
		}
		recs = append(recs, m)
	}
	if len(recs) != 2 {
		t.Fatalf("got %d records, want 2 (gRPC info is debug): %s", len(recs), buf.String())
	}
	want := []struct{ lib, level, msg string }{
		{"mysql", "WARN", "packets.go:58 unexpected EOF"},
		{"grpc", "WARN", "addrConn.createTransport failed: refused"},
	}
	for i, w := range want {
		r := recs[i]
		if r["lib"] != w.lib || r["level"] != w.level || r["msg"] != w.msg || r["node"] != float64(2) {
			t.Errorf("record %d = %v, want lib=%s level=%s msg=%q node=2", i, r, w.lib, w.level, w.msg)
		}
	}
}

type nopLogger struct{}

func (nopLogger) Print(...any) {}
