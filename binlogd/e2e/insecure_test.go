package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

// TestInsecureIsAnExplicitChoice: TLS is the default, so running without
// it must be written down, and is loud when it is.
//   - binlogd refuses a config with neither tls_* keys nor
//     "insecure_no_tls", naming the fix; sqlproxy refuses to start with
//     neither -tls-* nor -insecure; an operator command with no
//     certificate flags says what to pass.
//   - A one-node cluster with Spec.InsecureNoTLS runs and serves SQL
//     through its proxy, binlogd warns INSECURE in its log and exports
//     phxgo_binlogd_insecure_no_tls 1, and `binlogd status -insecure`
//     works.
func TestInsecureIsAnExplicitChoice(t *testing.T) {
	c, _ := localcluster.StartSpecForTest(t, localcluster.Spec{Nodes: 1, BinDir: binDir, Proxy: true,
		LeaseDuration: 3 * time.Second, InsecureNoTLS: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(name string, args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, filepath.Join(binDir, name), args...).CombinedOutput()
		return string(out), err
	}

	// The same node config without insecure_no_tls is refused at load.
	cfgPath := filepath.Join(c.Spec.NodeDir(1), "binlogd.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m["insecure_no_tls"] != true {
		t.Fatalf("localcluster wrote no insecure_no_tls: %s", raw)
	}
	delete(m, "insecure_no_tls")
	b, _ := json.Marshal(m)
	plain := filepath.Join(t.TempDir(), "binlogd.json")
	if err := os.WriteFile(plain, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run("binlogd", "run", "-config", plain)
	if err == nil || !strings.Contains(out, `"tls_cert"`) || !strings.Contains(out, `"insecure_no_tls": true`) {
		t.Fatalf("binlogd run without TLS keys or insecure_no_tls: %v\n%s", err, out)
	}
	t.Logf("binlogd refuses: %s", strings.TrimSpace(out))
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run("sqlproxy", "-listen", "127.0.0.1:0", "-binlogd", "127.0.0.1:1", "-http", "", "-admin-password-file", pwFile)
	if err == nil || !strings.Contains(out, "no TLS") || !strings.Contains(out, "-insecure") {
		t.Fatalf("sqlproxy without -tls-* or -insecure: %v\n%s", err, out)
	}

	// The insecure cluster works, and says it is insecure.
	db, err := c.AppDB(c.ProxyAddr(1))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sid int
	if err := db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&sid); err != nil || sid != 1 {
		t.Fatalf("SQL through the insecure proxy: server_id %d, %v", sid, err)
	}
	st, err := c.Status(ctx, 1)
	if err != nil || len(st.Members) != 1 {
		t.Fatalf("status: %v %v", st, err)
	}
	grpcAddr := st.Members[0].GrpcAddr
	if out, err := run("binlogd", "status", "-addr", grpcAddr); err == nil || !strings.Contains(out, "no client certificate") {
		t.Fatalf("binlogd status with no flags: %v\n%s", err, out)
	}
	if out, err := run("binlogd", "status", "-addr", grpcAddr, "-insecure"); err != nil || !strings.Contains(out, "role") {
		t.Fatalf("binlogd status -insecure: %v\n%s", err, out)
	}
	log, err := os.ReadFile(filepath.Join(c.Spec.NodeDir(1), "binlogd.log"))
	if err != nil || !strings.Contains(string(log), "INSECURE: binlogd gRPC links run without TLS") {
		t.Fatalf("binlogd.log has no INSECURE warning (%v)", err)
	}
	resp, err := http.Get("http://" + c.HTTPAddr(1) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "phxgo_binlogd_insecure_no_tls 1") {
		t.Fatal("metrics lack phxgo_binlogd_insecure_no_tls 1")
	}
}
