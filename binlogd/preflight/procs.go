package preflight

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Who holds what on this host, read from /proc (under Env.Root) without
// touching it: who listens on a TCP port, and whether this node's binlogd
// or MariaDB is running.

// proc is a process found holding something.
type proc struct {
	pid  int
	comm string // /proc/PID/comm: the program's name
}

func (p proc) String() string {
	if p.comm == "" {
		return fmt.Sprintf("pid %d", p.pid)
	}
	return fmt.Sprintf("pid %d (%s)", p.pid, p.comm)
}

func (e *Env) comm(pid int) string {
	b, err := os.ReadFile(e.sys(fmt.Sprintf("/proc/%d/comm", pid)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// listenerOf finds the process listening on TCP port (any address):
// /proc/net/tcp{,6} give the socket's inode, /proc/PID/fd the process
// holding it. Processes of other users are invisible to a non-root
// check; then the pid is 0.
func (e *Env) listenerOf(port int) proc {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(e.sys(f))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, found := strings.Cut(fs[1], ":")
			p, err := strconv.ParseUint(hexPort, 16, 16)
			if found && err == nil && int(p) == port {
				inodes[fs[9]] = true
			}
		}
		fh.Close()
	}
	if len(inodes) == 0 {
		return proc{}
	}
	pids, _ := filepath.Glob(e.sys("/proc/[0-9]*"))
	for _, dir := range pids {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				return proc{pid: pid, comm: e.comm(pid)}
			}
		}
	}
	return proc{}
}

// runningBinlogd is the binlogd holding this node's Paxos log: the wal
// keeps an exclusive flock on dir/paxos/wal.lock while open, and
// /proc/locks names its holder. Reading /proc/locks takes no lock, so a
// binlogd starting meanwhile is not disturbed. Badger's dir/paxos/LOCK
// (its pid, removed at a clean close) is the fallback.
func (e *Env) runningBinlogd(dir string) proc {
	if dir == "" {
		return proc{}
	}
	lockPath := filepath.Join(dir, "paxos", "wal.lock")
	if st, err := os.Stat(lockPath); err == nil {
		if pid := e.flockHolder(st); pid != 0 {
			return proc{pid: pid, comm: e.comm(pid)}
		}
	}
	if pid := readPid(filepath.Join(dir, "paxos", "LOCK")); pid != 0 && e.comm(pid) == "binlogd" {
		return proc{pid: pid, comm: "binlogd"}
	}
	return proc{}
}

// flockHolder returns the pid holding a FLOCK on the file st describes.
// A /proc/locks line: "1: FLOCK  ADVISORY  WRITE 1234 fd:00:5678 0 EOF"
// (major:minor:inode, the device numbers in hex).
func (e *Env) flockHolder(st os.FileInfo) int {
	sys, isUnix := st.Sys().(*syscall.Stat_t)
	if !isUnix {
		return 0
	}
	b, err := os.ReadFile(e.sys("/proc/locks"))
	if err != nil {
		return 0
	}
	want := strconv.FormatUint(sys.Ino, 10)
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 6 || fs[1] != "FLOCK" {
			continue
		}
		parts := strings.Split(fs[5], ":")
		if len(parts) != 3 || parts[2] != want {
			continue
		}
		maj, err1 := strconv.ParseUint(parts[0], 16, 32)
		mnr, err2 := strconv.ParseUint(parts[1], 16, 32)
		if err1 != nil || err2 != nil || maj != uint64(major(sys.Dev)) || mnr != uint64(minor(sys.Dev)) {
			continue
		}
		if pid, err := strconv.Atoi(fs[4]); err == nil {
			return pid
		}
	}
	return 0
}

// major and minor split a Linux dev_t (glibc's encoding).
func major(dev uint64) uint32 { return uint32((dev>>8)&0xfff) | uint32((dev>>32)&^0xfff) }
func minor(dev uint64) uint32 { return uint32(dev&0xff) | uint32((dev>>12)&^0xff) }

// runningMariadbd is the mariadbd of mysql_dir, from its pid file.
func (e *Env) runningMariadbd(mysqlDir string) proc {
	if mysqlDir == "" {
		return proc{}
	}
	pid := readPid(filepath.Join(mysqlDir, "mysqld.pid"))
	if pid == 0 {
		return proc{}
	}
	c := e.comm(pid)
	if c != "mariadbd" && c != "mysqld" {
		return proc{}
	}
	return proc{pid: pid, comm: c}
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
