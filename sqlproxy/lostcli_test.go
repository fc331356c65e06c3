package sqlproxy

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestLostOutcomeSeenByMariaDBCLI: the mariadb CLI (MariaDB's C client)
// whose statement's backend connection dies reads "outcome unknown". The
// proxy sent 2013, a client-range code the C client showed as "ERROR
// 2027 (HY000): Received malformed packet" (red-team test, session 39).
func TestLostOutcomeSeenByMariaDBCLI(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("no mariadb client")
	}
	m := startInstances(t, 1)[0]
	rootExec(t, m, "CREATE USER lostcli@'%' IDENTIFIED BY 'lostpw'")
	p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, nil)
	host, port, _ := net.SplitHostPort(p.addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const stmt = "SELECT SLEEP(50) AS lost_outcome"
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, cli, "-h", host, "-P", port, "-ulostcli", "-plostpw", "-e", stmt)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	root, err := m.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var id int64
	for id == 0 {
		err := root.QueryRowContext(ctx, "SELECT id FROM information_schema.processlist WHERE info = ?", stmt).Scan(&id)
		if err != nil && ctx.Err() != nil {
			t.Fatalf("the statement never reached MariaDB: %v\n%s", err, out.String())
		}
		if id == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, err := root.ExecContext(ctx, "KILL CONNECTION ?", id); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	got := out.String()
	if err == nil || !strings.Contains(got, "ERROR 1927 (08S01)") || !strings.Contains(got, "outcome unknown") {
		t.Fatalf("mariadb CLI after its backend connection died: %v\n%s", err, got)
	}
}
