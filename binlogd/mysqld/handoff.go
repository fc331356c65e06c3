package mysqld

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"phxgo/internal/durable"
)

// ErrNotAdoptable means a running mariadbd may not be taken over: it is
// not the one the handoff record names, not this instance's, or not a
// read-only server without waiting commits. The caller kills it and
// recovers, as after a crash.
var ErrNotAdoptable = errors.New("mysqld: running mariadbd not adoptable")

// Handoff is what a binlogd that stopped gracefully leaves for the next
// one: the mariadbd it left running, read-only, and how to tell it is the
// same process and the same server (a pid alone may be reused).
type Handoff struct {
	Pid int `json:"pid"`
	// StartTicks is the process's start time (/proc/PID/stat field 22,
	// clock ticks since boot): with the pid, it names one process.
	StartTicks uint64    `json:"start_ticks"`
	DataDir    string    `json:"datadir"`
	PidFile    string    `json:"pid_file"`
	Socket     string    `json:"socket"`
	Port       int       `json:"port"`
	ServerID   uint32    `json:"server_id"`
	GTIDPos    string    `json:"gtid_current_pos"` // informational: where it stood
	At         time.Time `json:"at"`
}

// server is what the running server says about itself over SQL.
type server struct {
	datadir, pidFile, socket string
	port                     int
	serverID                 uint32
	readOnly                 bool
	semiSyncMaster           bool
	waiting                  int
	gtidPos                  string
}

func (i *Instance) askServer(ctx context.Context, db *sql.DB) (server, error) {
	var s server
	var ro, semi int
	err := db.QueryRowContext(ctx, `SELECT @@GLOBAL.datadir, @@GLOBAL.pid_file, @@GLOBAL.socket, @@GLOBAL.port,
		@@GLOBAL.server_id, @@GLOBAL.read_only, @@GLOBAL.rpl_semi_sync_master_enabled, @@GLOBAL.gtid_current_pos`).
		Scan(&s.datadir, &s.pidFile, &s.socket, &s.port, &s.serverID, &ro, &semi, &s.gtidPos)
	if err != nil {
		return s, fmt.Errorf("mysqld: read server identity: %w", err)
	}
	s.readOnly, s.semiSyncMaster = ro == 1, semi == 1
	var k, v string
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_wait_sessions'").Scan(&k, &v); err != nil {
		return s, fmt.Errorf("mysqld: read waiting commits: %w", err)
	}
	if s.waiting, err = strconv.Atoi(v); err != nil {
		return s, fmt.Errorf("mysqld: waiting commits %q: %w", v, err)
	}
	return s, nil
}

// check compares what the server says with this instance's options: the
// server on this instance's socket must be this instance's server, and a
// read-only one with no commit waiting for an ACK.
func (i *Instance) check(s server) error {
	var bad []string
	if filepath.Clean(s.datadir) != filepath.Clean(i.DataDir()) {
		bad = append(bad, fmt.Sprintf("datadir %s, want %s", s.datadir, i.DataDir()))
	}
	if s.pidFile != i.PidFile() {
		bad = append(bad, fmt.Sprintf("pid_file %s, want %s", s.pidFile, i.PidFile()))
	}
	if s.socket != i.Socket() {
		bad = append(bad, fmt.Sprintf("socket %s, want %s", s.socket, i.Socket()))
	}
	if s.port != i.opts.Port {
		bad = append(bad, fmt.Sprintf("port %d, want %d", s.port, i.opts.Port))
	}
	if s.serverID != i.opts.ServerID {
		bad = append(bad, fmt.Sprintf("server_id %d, want %d", s.serverID, i.opts.ServerID))
	}
	if !s.readOnly {
		bad = append(bad, "read_only is OFF")
	}
	if s.waiting != 0 {
		bad = append(bad, fmt.Sprintf("%d commits wait for an ACK", s.waiting))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrNotAdoptable, strings.Join(bad, "; "))
	}
	return nil
}

// Handoff describes the running mariadbd for the next binlogd, after
// checking that it is this instance's and read-only with nothing waiting
// (the caller made it so). The caller stores the record durably and then
// exits without stopping mariadbd.
func (i *Instance) Handoff(ctx context.Context, db *sql.DB) (Handoff, error) {
	pid := i.Pid()
	if pid == 0 {
		return Handoff{}, ErrNotRunning
	}
	s, err := i.askServer(ctx, db)
	if err != nil {
		return Handoff{}, err
	}
	if err := i.check(s); err != nil {
		return Handoff{}, err
	}
	if err := i.ownProcess(pid); err != nil {
		return Handoff{}, err
	}
	ticks, err := startTicks(pid)
	if err != nil {
		return Handoff{}, err
	}
	return Handoff{Pid: pid, StartTicks: ticks, DataDir: i.DataDir(), PidFile: i.PidFile(), Socket: i.Socket(),
		Port: i.opts.Port, ServerID: i.opts.ServerID, GTIDPos: s.gtidPos, At: time.Now().UTC()}, nil
}

// Adopt takes over the mariadbd a graceful binlogd stop left running, as
// h describes it, after checking that it is that very process (pid, start
// time, pid file, command line with this instance's my.cnf) and that the
// server on this instance's socket is this instance's (datadir, pid file,
// socket, port, server id), read-only, with no commit waiting for an ACK.
// The process is then watched by polling (it is not this process's
// child). Any mismatch is ErrNotAdoptable and nothing is adopted.
func (i *Instance) Adopt(ctx context.Context, h Handoff) error {
	if h.DataDir != i.DataDir() || h.PidFile != i.PidFile() || h.Socket != i.Socket() || h.Port != i.opts.Port || h.ServerID != i.opts.ServerID {
		return fmt.Errorf("%w: the handoff record is for another instance (%s, port %d, server id %d)", ErrNotAdoptable, h.DataDir, h.Port, h.ServerID)
	}
	if h.Pid <= 0 || !Alive(h.Pid) {
		return fmt.Errorf("%w: pid %d is not running", ErrNotAdoptable, h.Pid)
	}
	if ticks, err := startTicks(h.Pid); err != nil || ticks != h.StartTicks {
		return fmt.Errorf("%w: pid %d is another process than the one handed off (start %d, want %d; %v)", ErrNotAdoptable, h.Pid, ticks, h.StartTicks, err)
	}
	if err := i.ownProcess(h.Pid); err != nil {
		return err
	}
	if p := readPidFile(i.PidFile()); p != h.Pid {
		return fmt.Errorf("%w: pid file %s says %d, the record %d", ErrNotAdoptable, i.PidFile(), p, h.Pid)
	}
	db, err := i.open("")
	if err != nil {
		return err
	}
	defer db.Close()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := i.askServer(qctx, db)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotAdoptable, err)
	}
	if err := i.check(s); err != nil {
		return err
	}
	if !i.watch(h.Pid) {
		return fmt.Errorf("%w: this handle already runs pid %d", ErrNotAdoptable, i.Pid())
	}
	i.opts.Logger.Info("adopted the mariadbd a graceful binlogd stop left running", "pid", h.Pid, "dir", i.opts.Dir,
		"gtid_current_pos", s.gtidPos, "handed_off_at", h.At)
	return nil
}

// Orphan is the pid of a mariadbd of this instance that this process did
// not start or adopt (one a crashed binlogd left behind), or 0.
func (i *Instance) Orphan() int {
	pid := readPidFile(i.PidFile())
	if pid <= 0 || pid == i.Pid() || !Alive(pid) || i.ownProcess(pid) != nil {
		return 0
	}
	return pid
}

// KillOrphan SIGKILLs the mariadbd a crashed binlogd left behind and
// waits until it is gone, so that recovery cuts its binlog before the next
// start, as after any crash. It returns the pid killed, or 0.
func (i *Instance) KillOrphan(timeout time.Duration) (int, error) {
	pid := i.Orphan()
	if pid == 0 {
		return 0, nil
	}
	if !i.watch(pid) {
		return 0, fmt.Errorf("mysqld: pid %d: this handle already runs pid %d", pid, i.Pid())
	}
	return pid, i.signalAndWait(syscallKill, timeout)
}

// watch makes pid this handle's process, watched by polling; false if the
// handle already has another.
func (i *Instance) watch(pid int) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.pid != 0 {
		return i.pid == pid
	}
	done := make(chan struct{})
	i.pid, i.done = pid, done
	go func() {
		for Alive(pid) {
			time.Sleep(100 * time.Millisecond) // not our child: no Wait, only polling
		}
		i.exited(pid, done)
	}()
	return true
}

// ownProcess checks that pid is mariadbd started with this instance's
// my.cnf.
func (i *Instance) ownProcess(pid int) error {
	if !isMariadbd(pid) {
		return fmt.Errorf("%w: pid %d is not mariadbd", ErrNotAdoptable, pid)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return fmt.Errorf("%w: pid %d: %w", ErrNotAdoptable, pid, err)
	}
	want := "--defaults-file=" + i.ConfigFile()
	for _, a := range bytes.Split(b, []byte{0}) {
		if string(a) == want {
			return nil
		}
	}
	return fmt.Errorf("%w: pid %d was not started with %s", ErrNotAdoptable, pid, want)
}

// startTicks reads field 22 of /proc/PID/stat (after the command name in
// parentheses, which may itself hold spaces).
func startTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	j := bytes.LastIndexByte(b, ')')
	if j < 0 {
		return 0, fmt.Errorf("mysqld: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[j+1:]))
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("mysqld: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func readPidFile(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil {
		return 0
	}
	return pid
}

// SaveHandoff writes h to path durably (temp file, fsync, rename, fsync
// of the directory): the next binlogd adopts only what a record names.
func SaveHandoff(path string, h Handoff) error {
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("mysqld: save handoff %s: %w", path, err)
	}
	return durable.SyncDir(filepath.Dir(path))
}

// TakeHandoff reads the record at path and removes it (durably) before
// returning it: a record is used at most once, so a binlogd that dies
// while adopting leaves an orphan, which the next start kills and
// recovers. ok is false when there is none.
func TakeHandoff(path string) (h Handoff, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Handoff{}, false, nil
	}
	if err != nil {
		return Handoff{}, false, err
	}
	if err := os.Remove(path); err != nil {
		return Handoff{}, false, err
	}
	if err := durable.SyncDir(filepath.Dir(path)); err != nil {
		return Handoff{}, false, err
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return Handoff{}, false, fmt.Errorf("mysqld: handoff record %s: %w", path, err)
	}
	return h, true, nil
}
