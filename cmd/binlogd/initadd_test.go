package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
)

// TestInitAddNode: init -add writes one joining node from the existing
// output's CA, credentials and members; its certificate verifies against
// the cluster's CA; an id already taken, a second node and an -out without
// the CA key are refused without writing anything.
func TestInitAddNode(t *testing.T) {
	noDial(t)
	root := t.TempDir()
	out := filepath.Join(root, "o")
	if _, err := initArgs(t, "-out", out, "-hosts", "10.9.0.1,10.9.0.2,10.9.0.3", "-lease", "3s",
		"-dir", filepath.Join(root, "n{id}", "b"), "-mysql-dir", filepath.Join(root, "n{id}", "m")); err != nil {
		t.Fatal(err)
	}
	add := []string{"-out", out, "-add", "-dir", filepath.Join(root, "n{id}", "b"), "-mysql-dir", filepath.Join(root, "n{id}", "m")}
	if _, err := initArgs(t, append(add, "-node", "2=10.9.0.4:17011,10.9.0.4:3306")...); err == nil {
		t.Fatal("-add of an id already in the cluster was accepted")
	}
	if _, err := initArgs(t, append(add, "-node", "4=10.9.0.4:17011,10.9.0.4:3306", "-node", "5=10.9.0.5:17011,10.9.0.5:3306")...); err == nil {
		t.Fatal("-add of two nodes was accepted")
	}
	text, err := initArgs(t, append(add, "-node", "4=10.9.0.4:17011,10.9.0.4:3306,10.9.0.4:3307")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(text)
	cfgs := checkInitOut(t, out, 4)
	c := cfgs[0]
	if !c.Join || len(c.Members) != 4 || c.LeaseDuration.Duration != 3*time.Second {
		t.Fatalf("node 4: join=%v members=%d lease=%v, want join, 4 members, the cluster's 3s lease", c.Join, len(c.Members), c.LeaseDuration)
	}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(filepath.Join(out, mtls.CACertFile))
	pool.AppendCertsFromPEM(caPEM)
	b, _ := os.ReadFile(filepath.Join(out, "node4", "node4.crt"))
	blk, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "10.9.0.4", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Fatalf("node4.crt does not verify against the cluster's CA for 10.9.0.4: %v", err)
	}
	if _, err := config.Load(filepath.Join(out, "node4", "binlogd.json")); err != nil {
		t.Fatal(err)
	}
	// Without the CA key nothing is written.
	if err := os.Rename(filepath.Join(out, mtls.CAKeyFile), filepath.Join(root, "ca.key")); err != nil {
		t.Fatal(err)
	}
	if _, err := initArgs(t, append(add, "-node", "5=10.9.0.5:17011,10.9.0.5:3306")...); err == nil {
		t.Fatal("-add without ca.key in -out was accepted")
	}
	if _, err := os.Stat(filepath.Join(out, "node5")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("node5 written without the CA key: %v", err)
	}
}

// TestInitAddCopiesBaseGTID: a node added to a cluster rebuilt from a
// backup gets the cluster's base_gtid, from -out's configs or from a
// member's live config (-seed-config); configs that disagree are refused.
func TestInitAddCopiesBaseGTID(t *testing.T) {
	noDial(t)
	root := t.TempDir()
	out := filepath.Join(root, "o")
	if _, err := initArgs(t, "-out", out, "-hosts", "10.9.0.1,10.9.0.2,10.9.0.3"); err != nil {
		t.Fatal(err)
	}
	add := func(id string, extra ...string) (string, error) {
		return initArgs(t, append([]string{"-out", out, "-add", "-node", id + "=10.9.0." + id + ":17011,10.9.0." + id + ":3306,10.9.0." + id + ":3307"}, extra...)...)
	}
	// A member's live config after restore -new-cluster, -out's still without.
	live := filepath.Join(out, "node1", "live.json") // beside its certificates
	b, err := os.ReadFile(filepath.Join(out, "node1", "binlogd.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(live, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := setConfigKey(live, "base_gtid", "0-1-500"); err != nil {
		t.Fatal(err)
	}
	if _, err := add("4", "-seed-config", live); err != nil {
		t.Fatal(err)
	}
	if c := checkInitOut(t, out, 4)[0]; c.BaseGTID != "0-1-500" {
		t.Fatalf("node 4 base_gtid %q, want the seed's 0-1-500", c.BaseGTID)
	}
	// From -out's configs (now that node 4's has it), without -seed-config.
	text, err := add("5")
	if err != nil {
		t.Fatal(err)
	}
	if c := checkInitOut(t, out, 5)[0]; c.BaseGTID != "0-1-500" || !strings.Contains(text, "0-1-500") {
		t.Fatalf("node 5 base_gtid %q (output %q), want 0-1-500 from node 4's config", c.BaseGTID, text)
	}
	// A seed that disagrees with -out is refused, and nothing is written.
	if err := setConfigKey(live, "base_gtid", "0-1-777"); err != nil {
		t.Fatal(err)
	}
	if _, err := add("6", "-seed-config", live); err == nil || !strings.Contains(err.Error(), "0-1-777") {
		t.Fatalf("-add with a seed whose base_gtid disagrees: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "node6")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("node6 written despite the disagreement: %v", err)
	}
}
