package mysqld

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// syscallKill is how an orphan (a mariadbd a crashed binlogd left) ends:
// never gracefully, since commits may wait for an ACK (DESIGN.md).
const syscallKill = syscall.SIGKILL

// PidFile is where mariadbd writes its pid. Adopting a running mariadbd
// (handoff.go) starts from it.
func (i *Instance) PidFile() string { return filepath.Join(i.opts.Dir, "mysqld.pid") }

// exited forgets the process, then wakes the waiters: whoever sees done
// closed must also see Pid() == 0.
func (i *Instance) exited(pid int, done chan struct{}) {
	i.mu.Lock()
	if i.pid == pid {
		i.pid, i.cmd = 0, nil
	}
	i.mu.Unlock()
	close(done)
}

// Alive reports whether pid is a live process (not a zombie). A killed
// multi-threaded process (binlogd, mariadbd) shows its main thread as a
// zombie while its other threads still exit, and until the last one has,
// its files, and the locks on them (the wal's flock), are still held: so
// the process counts as alive while any of its threads is not a zombie.
func Alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	proc := "/proc/" + strconv.Itoa(pid)
	tasks, err := os.ReadDir(proc + "/task")
	if err != nil {
		return running(proc + "/stat")
	}
	for _, t := range tasks {
		if running(proc + "/task/" + t.Name() + "/stat") {
			return true
		}
	}
	return false
}

// running reads a /proc stat file: false for a zombie, a dead task, or one
// already gone.
func running(stat string) bool {
	b, err := os.ReadFile(stat)
	if err != nil {
		return false
	}
	if j := bytes.LastIndexByte(b, ')'); j >= 0 && j+2 < len(b) {
		return b[j+2] != 'Z' && b[j+2] != 'X'
	}
	return true
}

func isMariadbd(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return false
	}
	c := string(bytes.TrimSpace(b))
	return c == "mariadbd" || c == "mysqld"
}
