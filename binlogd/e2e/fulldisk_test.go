package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"phxgo/binlogd/localcluster"
	"phxgo/binlogd/node"
	pb "phxgo/proto"
)

// TestFullDiskTakesMasterOut: every node's Paxos log lives on its own
// tmpfs; once a workload runs, the master's fills up. Its wal fails
// (ErrDiskFull: under the free-space reserve), the Paxos node stops, and binlogd must take itself out
// of service, never look healthy: gRPC health NOT_SERVING ("" and
// phxgo.binlogd), /healthz 503 with the reason, status UNSAFE "storage
// failed", phxgo_binlogd_storage_failed 1, MariaDB read-only or killed,
// no lease renewal (another node becomes master and writes go on), and the
// process stays up for the operator to see. Every acknowledged insert is
// on the new master and the remaining replica.
func TestFullDiskTakesMasterOut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root")
	}
	spec := localcluster.Spec{BinDir: binDir, Nodes: 3, LeaseDuration: failoverLease, Dir: t.TempDir(), BasePort: localcluster.FreeBasePort(4)}
	if keep := os.Getenv("PHXGO_KEEP_CLUSTER"); keep != "" {
		spec.Dir, _ = os.MkdirTemp(keep, "fulldisk-") // debugging, as StartSpecForTest
	}
	for id := 1; id <= spec.Nodes; id++ {
		mountTmpfs(t, filepath.Join(spec.NodeDir(id), "paxos"), "512m")
	}
	c, master := localcluster.StartSpecForTest(t, spec)
	w := startWorkload(t, c, master)

	fillDisk(t, filepath.Join(spec.NodeDir(int(master)), "paxos"))
	fault := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var st *pb.NodeStatus
	var err error
	awaitE2E(t, ctx, "the full node to mark itself out", func() (bool, string) {
		st, err = c.Status(ctx, master)
		return err == nil && st.Role == pb.Role_ROLE_UNSAFE && strings.Contains(st.UnsafeReason, "storage failed"), fmt.Sprintf("%v %v", st, err)
	})
	if !strings.Contains(st.UnsafeReason, "disk full") {
		t.Errorf("reason %q does not say the disk is full", st.UnsafeReason)
	}
	t.Logf("status of node %d: %s", master, st.UnsafeReason)

	grpcAddr := ""
	for _, m := range st.Members {
		if m.Id == master {
			grpcAddr = m.GrpcAddr
		}
	}
	creds, err := c.Spec.AdminDialOption()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(grpcAddr, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	for _, svc := range []string{"", node.HealthService} {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("health %q = %v, %v; want NOT_SERVING", svc, r, err)
		}
	}
	code, body := httpGet(t, "http://"+c.HTTPAddr(master)+"/healthz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "storage failed") {
		t.Errorf("/healthz = %d %q; want 503 naming the storage failure", code, body)
	}
	if _, m := httpGet(t, "http://"+c.HTTPAddr(master)+"/metrics"); !strings.Contains(m, "phxgo_binlogd_storage_failed 1") {
		t.Error("/metrics lacks phxgo_binlogd_storage_failed 1")
	}

	// MariaDB on the old master takes no writes: read_only, or killed.
	awaitE2E(t, ctx, "the old master's MariaDB to refuse writes", func() (bool, string) {
		rdb, err := c.RootDB(master)
		if err != nil {
			return true, "" // down
		}
		defer rdb.Close()
		var ro int
		if err := rdb.QueryRowContext(ctx, "SELECT @@GLOBAL.read_only").Scan(&ro); err != nil {
			return true, "" // down (killed with commits waiting)
		}
		return ro == 1, fmt.Sprintf("read_only=%d", ro)
	})

	// No renewal: the lease expires and another node takes over; writes
	// resume there.
	awaitE2E(t, ctx, "a new master", func() (bool, string) {
		desc := ""
		for _, id := range c.IDs() {
			if id == master {
				continue
			}
			s, err := c.Status(ctx, id)
			if err == nil && s.Role == pb.Role_ROLE_MASTER {
				return true, ""
			}
			desc += fmt.Sprintf(" node %d: %v %v;", id, s, err)
		}
		return false, desc
	})
	w.awaitAcks(t, 50, 2*time.Minute)
	last, first := w.gap(fault)
	t.Logf("full disk on the master: writes resumed %.2fs after the last ack before it (lease %v)", first.Sub(last).Seconds(), failoverLease)
	if c.Pid(master, "binlogd") == 0 {
		t.Error("binlogd exited; it should stay up, out of service, for the operator")
	}
	if s, err := c.Status(ctx, master); err != nil || s.Role != pb.Role_ROLE_UNSAFE {
		t.Errorf("old master's status later: %v %v; want it still UNSAFE", s, err)
	}
	w.stop()
	checkAckedOn(t, c, w, master)
}

// checkAckedOn is writers.checkAcked on every node but skip.
func checkAckedOn(t *testing.T, c *localcluster.Cluster, w *writers, skip uint32) {
	t.Helper()
	var ids []uint32
	for _, id := range c.IDs() {
		if id != skip {
			ids = append(ids, id)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w.mu.Lock()
	want := len(w.acked)
	w.mu.Unlock()
	for _, id := range ids {
		awaitE2E(t, ctx, fmt.Sprintf("node %d to hold every acknowledged insert", id), func() (bool, string) {
			db, err := c.RootDB(id)
			if err != nil {
				return false, err.Error()
			}
			defer db.Close()
			w.mu.Lock()
			defer w.mu.Unlock()
			missing := 0
			for x := range w.acked {
				var one int
				if err := db.QueryRowContext(ctx, "SELECT 1 FROM e2e.w WHERE id = ?", x).Scan(&one); err != nil {
					missing++
				}
			}
			return missing == 0, fmt.Sprintf("%d of %d missing", missing, want)
		})
	}
}

func awaitE2E(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	for {
		ok, desc := cond()
		if ok {
			return
		}
		last = desc
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s: %s", what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// mountTmpfs mounts a tmpfs of size on dir (created) until the test ends.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	// Registered before the cluster's own cleanup, so it runs after the
	// nodes stopped.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// fillDisk fills dir's filesystem until less than the wal's free-space
// reserve (wal.Options.MinFreeBytes, 256 MiB) is left: from the node's
// point of view the disk is full. (Filling it to the last byte would kill
// binlogd with a SIGBUS in one of Badger's mapped writes before the wal
// noticed; the reserve is what keeps that from happening: wal/space.go.)
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		if st.Bavail*uint64(st.Bsize) < 200<<20 {
			return
		}
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
}
