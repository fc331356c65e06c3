package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	"phxgo/binlogd/mtls/mtlstest"
)

// TestTLSCluster runs the real 3-node cluster with every link in mutual
// TLS (certificates from scripts/make-test-ca.sh; the other e2e tests use
// the ones localcluster issues by default): a master is elected over
// Paxos-in-TLS, a write through a non-master's proxy crosses the TLS hop
// (proxy certificates) and replicates everywhere, `binlogd status` works
// with the node's config and is refused without a certificate, with
// -insecure and with another CA's; `binlogd switchover` with a node's
// certificate is PermissionDenied, and with the admin certificate (the
// master then asks the target over Admin-in-TLS whether it caught up)
// hands the lease over.
func TestTLSCluster(t *testing.T) {
	start := time.Now()
	ca, other := mtlstest.MakeCA(t, 3), mtlstest.MakeCA(t, 1)
	c, master := localcluster.StartSpecForTest(t, localcluster.Spec{Nodes: 3, BinDir: binDir,
		LeaseDuration: 3 * time.Second, Proxy: true, TLSDir: ca})
	t.Logf("TLS cluster healthy after %.1fs, master %d", time.Since(start).Seconds(), master)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	follower := master%3 + 1
	db, err := c.AppDB(c.ProxyAddr(follower))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sid uint32
	for { // the follower's proxy learns the master within a poll
		if err := db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&sid); err == nil && sid == master {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("proxy %d never reached the master over the TLS hop: %v (server_id %d)", follower, err, sid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mustExec(t, db, "CREATE DATABASE tlsdb")
	mustExec(t, db, "CREATE TABLE tlsdb.t (k INT PRIMARY KEY)")
	mustExec(t, db, "INSERT INTO tlsdb.t VALUES (1), (2), (3)")
	awaitSameData(t, c, "tlsdb.t")

	bin := filepath.Join(binDir, "binlogd")
	cfgOf := func(id uint32) string { return filepath.Join(c.Spec.NodeDir(int(id)), "binlogd.json") }
	grpcOf := func(id uint32) string {
		st, err := c.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Members {
			if m.Id == id {
				return m.GrpcAddr
			}
		}
		t.Fatalf("node %d not in its own member list", id)
		return ""
	}
	run := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("status", "-addr", grpcOf(follower), "-config", cfgOf(follower)); err != nil || !strings.Contains(out, "role") {
		t.Fatalf("binlogd status with the node's config: %v\n%s", err, out)
	}
	if out, err := run("status", "-addr", grpcOf(follower)); err == nil || !strings.Contains(out, "no client certificate") {
		t.Fatalf("binlogd status without a certificate: %v\n%s", err, out)
	}
	if out, err := run("status", "-addr", grpcOf(follower), "-insecure"); err == nil || !strings.Contains(out, "-insecure: if the node has tls_* keys") {
		t.Fatalf("binlogd status -insecure against a TLS node: %v\n%s", err, out)
	}
	o := mtlstest.Files(other, 1)
	out, err := run("status", "-addr", grpcOf(follower), "-tls-cert", o.Cert, "-tls-key", o.Key, "-tls-ca", o.CA)
	if err == nil || !strings.Contains(out, "certificate") {
		t.Fatalf("binlogd status with another CA's certificate: %v\n%s", err, out)
	}
	t.Logf("another CA's certificate: %s", strings.TrimSpace(out))

	out, err = run("switchover", "-addr", grpcOf(master), "-config", cfgOf(master), "-to", fmt.Sprint(follower))
	if err == nil || !strings.Contains(out, "PermissionDenied") || !strings.Contains(out, "role admin") || !strings.Contains(out, fmt.Sprintf("node %d", master)) {
		t.Fatalf("binlogd switchover with a node's certificate: %v\n%s", err, out)
	}
	t.Logf("switchover with node %d's certificate: %s", master, strings.TrimSpace(out))
	out, err = run("switchover", "-addr", grpcOf(master), "-tls-dir", ca, "-to", fmt.Sprint(follower))
	if err != nil {
		t.Fatalf("binlogd switchover with the admin certificate: %v\n%s", err, out)
	}
	awaitReadyMaster(ctx, t, c, follower)
	mustExec(t, db, "INSERT INTO tlsdb.t VALUES (4)")
	awaitSameData(t, c, "tlsdb.t")
	t.Logf("whole TLS cluster test: %.1fs", time.Since(start).Seconds())
}
