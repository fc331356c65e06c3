package failover

import (
	"context"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

// TestFailoverShort: one failover of a 3-node cluster (lease 3 s) under
// 16 insert threads through the proxies. Every part must be measured and
// the parts must follow one another; the figures are logged, not
// asserted (the machine is shared).
func TestFailoverShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real cluster; skipped in -short")
	}
	bin := t.TempDir()
	if err := localcluster.BuildBinaries(bin); err != nil {
		t.Fatal(err)
	}
	c, master := localcluster.StartForTest(t, bin, 3, 3*time.Second, true)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := Setup(ctx, c, master); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Threads, o.Warmup = 16, 100
	p, err := Measure(ctx, c, master, o)
	t.Log("\n" + p.String())
	if err != nil {
		c.DumpLogs(t)
		t.Fatal(err)
	}
	if !p.Ordered() {
		t.Fatalf("parts out of order: %+v", p)
	}
	if p.AcksAfter == 0 {
		t.Fatal("no insert acknowledged after the kill")
	}
}
