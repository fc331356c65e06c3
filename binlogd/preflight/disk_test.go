package preflight

import (
	"os"
	"testing"
	"time"
)

func TestJudgeFree(t *testing.T) {
	l := DefaultLimits()
	for _, c := range []struct {
		free uint64
		want Status
	}{{100 << 30, OK}, {10 << 30, OK}, {10<<30 - 1, Warn}, {1 << 30, Warn}, {1<<30 - 1, Fail}, {0, Fail}} {
		r := judgeFree("disk dir", "/d", c.free, l)
		if r.Status != c.want || (c.want != OK && r.Fix == "") {
			t.Errorf("%d bytes free: got %s (%s), want %s", c.free, r.Status, r.Finding, c.want)
		}
	}
}

func TestJudgeFSType(t *testing.T) {
	for _, c := range []struct {
		magic int64
		want  Status
		name  string
	}{{0xEF53, OK, "ext4"}, {0x58465342, OK, "xfs"}, {0x794C7630, OK, "overlay"}, {0x01021994, Warn, "tmpfs"},
		{0x6969, Warn, "nfs"}, {0x12345, OK, "type 0x12345"}} {
		want1(t, []Result{judgeFSType("fs dir", "/d", c.magic)}, c.want, c.name, "")
	}
}

func TestPercentile(t *testing.T) {
	var xs []time.Duration
	for i := 100; i >= 1; i-- {
		xs = append(xs, time.Duration(i)*time.Millisecond)
	}
	if p50, p99, p100 := percentile(xs, 50), percentile(xs, 99), percentile(xs, 100); p50 != 50*time.Millisecond || p99 != 99*time.Millisecond || p100 != 100*time.Millisecond {
		t.Fatalf("p50 %v p99 %v p100 %v", p50, p99, p100)
	}
	if p := percentile([]time.Duration{7}, 99); p != 7 {
		t.Fatalf("one sample: %v", p)
	}
}

func TestCheckFsync(t *testing.T) {
	dir := t.TempDir()
	l := DefaultLimits()
	l.FsyncSamples = 20
	l.FsyncWarnP99 = time.Hour
	want1(t, []Result{checkFsync("fsync dir", dir, l)}, OK, "(20 samples)", "")
	l.FsyncWarnP99 = 0 // every real sync is slower than that: the warn path
	want1(t, []Result{checkFsync("fsync dir", dir, l)}, Warn, "over 0s", "local SSD")
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the probe left %v", ents)
	}
}

func TestCheckDiskRealDirs(t *testing.T) {
	env := testEnv(t)
	env.Config = testConfig(t) // dirs do not exist yet: measured in the nearest parent
	env.Limits.FsyncSamples = 5
	env.Limits.WarnFreeBytes, env.Limits.FailFreeBytes = 0, 0
	env.Limits.FsyncWarnP99 = time.Hour
	rs := CheckDisk(env)
	if len(rs) != 6 || Worst(rs) == Fail {
		t.Fatalf("want 6 results, no FAIL: %+v", rs)
	}
}
