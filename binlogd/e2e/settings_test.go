package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

// binlogd refuses a MariaDB whose settings would let a commit be
// acknowledged before it is durable, and says which setting is wrong.
func TestRefusesUnsafeSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real cluster")
	}
	spec := localcluster.Spec{Dir: t.TempDir(), Nodes: 1, BasePort: localcluster.FreeBasePort(1), BinDir: binDir,
		LeaseDuration: 3 * time.Second, MySQLExtra: []string{"sync_binlog=0"}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for {
		st, err := c.Status(ctx, 1)
		if err == nil && st.Role == pb.Role_ROLE_UNSAFE {
			if !strings.Contains(st.UnsafeReason, "sync_binlog") {
				t.Fatalf("unsafe, but the reason does not name sync_binlog: %s", st.UnsafeReason)
			}
			if st.MasterId == 1 && st.Ready {
				t.Fatal("an unsafe node serves as master")
			}
			t.Log(st.UnsafeReason)
			return
		}
		if ctx.Err() != nil {
			c.DumpLogs(t)
			t.Fatalf("never refused: %v %v", st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
