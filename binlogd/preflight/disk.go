package preflight

import (
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"
)

// Filesystem magic numbers (statfs f_type) worth naming.
var fsNames = map[int64]string{
	0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0x2FC12FC1: "zfs",
	0x01021994: "tmpfs", 0x858458F6: "ramfs", 0x794C7630: "overlay",
	0x6969: "nfs", 0xFF534D42: "cifs", 0xFE534D42: "smb2", 0x00C36400: "ceph",
	0x65735546: "fuse", 0x01021997: "9p", 0x5346414F: "afs", 0x47504653: "gpfs",
}

// volatileFS lose everything at a reboot: a Paxos promise or an
// acknowledged commit kept there is not durable.
var volatileFS = map[string]bool{"tmpfs": true, "ramfs": true}

// networkFS: every sync is a network round trip, and their locking and
// sync semantics vary.
var networkFS = map[string]bool{"nfs": true, "cifs": true, "smb2": true, "ceph": true, "9p": true, "afs": true, "gpfs": true, "fuse": true}

// CheckDisk checks the filesystems of dir and mysql_dir: free space,
// type, and how long a small write plus fdatasync takes (binlogd syncs
// its log, MariaDB its binlog and redo log, on every commit).
func CheckDisk(env *Env) []Result {
	cfg := env.Config
	if cfg == nil {
		return nil
	}
	var out []Result
	for _, d := range []struct{ key, path string }{{"dir", cfg.Dir}, {"mysql_dir", cfg.MySQLDir}} {
		if d.path == "" {
			continue
		}
		at, _, _, err := nearestExisting(d.path)
		if err != nil {
			out = append(out, fail("disk "+d.key, "see dir "+d.key, "%s: %v", d.path, err))
			continue
		}
		var sfs syscall.Statfs_t
		if err := syscall.Statfs(at, &sfs); err != nil {
			out = append(out, fail("disk "+d.key, "see dir "+d.key, "statfs %s: %v", at, err))
			continue
		}
		out = append(out, judgeFree("disk "+d.key, d.path, uint64(sfs.Bavail)*uint64(sfs.Bsize), env.Limits))
		out = append(out, judgeFSType("fs "+d.key, d.path, sfs.Type))
		out = append(out, checkFsync("fsync "+d.key, at, env.Limits))
	}
	return out
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

func judgeFree(name, path string, free uint64, l Limits) Result {
	const fix = "free space on that filesystem, or move the directory to a larger one (and set the key in the config)"
	switch {
	case free < l.FailFreeBytes:
		return fail(name, fix, "%s free on %s's filesystem (FAIL under %s): a full disk stops commits", gib(free), path, gib(l.FailFreeBytes))
	case free < l.WarnFreeBytes:
		return warn(name, fix, "%s free on %s's filesystem (warn under %s)", gib(free), path, gib(l.WarnFreeBytes))
	}
	return ok(name, "%s free on %s's filesystem", gib(free), path)
}

func judgeFSType(name, path string, magic int64) Result {
	t, known := fsNames[magic]
	if !known {
		t = fmt.Sprintf("type 0x%X", magic)
	}
	const fix = "put it on a local disk filesystem (ext4, xfs) and set the key in the config to the new path"
	switch {
	case volatileFS[t]:
		return warn(name, fix, "%s is on %s: not durable, a reboot loses the node's log or data", path, t)
	case networkFS[t]:
		return warn(name, fix, "%s is on %s, a network filesystem: every commit's sync is a network round trip", path, t)
	}
	return ok(name, "%s is on %s", path, t)
}

// checkFsync appends 4 KiB and fdatasyncs, Limits.FsyncSamples times, in
// a temporary file in dir (as the log appends and syncs), and reports the
// latency's p50 and p99.
func checkFsync(name, dir string, l Limits) Result {
	lat, err := measureFsync(dir, l.FsyncSamples)
	if err != nil {
		return warn(name, fmt.Sprintf("make %s writable and run the check again", dir), "cannot measure in %s: %v", dir, err)
	}
	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	r := ok(name, "%s: write+fdatasync of 4 KiB p50 %v, p99 %v (%d samples)", dir, round(p50), round(p99), len(lat))
	if p99 > l.FsyncWarnP99 {
		r = warn(name, "use a local SSD (or a disk with a non-volatile write cache) for this directory",
			"%s: write+fdatasync of 4 KiB p50 %v, p99 %v (%d samples), over %v: every commit waits for such syncs (a network or busy disk?)",
			dir, round(p50), round(p99), len(lat), l.FsyncWarnP99)
	}
	return r
}

func measureFsync(dir string, n int) ([]time.Duration, error) {
	if n <= 0 {
		n = 1
	}
	f, err := os.CreateTemp(dir, ".binlogd-check-fsync-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		buf[0] = byte(i) // not all zeroes: no filesystem may skip it
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			return nil, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return nil, fmt.Errorf("fdatasync: %w", err)
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

// percentile is the nearest-rank percentile p of xs (sorted in place).
func percentile(xs []time.Duration, p int) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := (len(xs)*p + 99) / 100 // ceil(n*p/100), 1-based
	return xs[max(i, 1)-1]
}

func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}
