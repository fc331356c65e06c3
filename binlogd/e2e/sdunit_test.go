package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A small stand-in for systemd, enough to run the project's units the way
// systemd would: the unit's own command lines (ExecStartPre, ExecStart,
// ExecStop), its User=, Type=notify readiness over a notification socket,
// and its stop procedure (KillMode, KillSignal, TimeoutStopSec, the final
// SIGKILL) applied to a real cgroup (v2) that holds every process the
// service starts, as systemd's own does. No systemd runs in the test
// machines, and a test that only read the unit file could not show what
// its lines do to a node.

// unit is the [Service] part of a unit file, specifiers resolved.
type unit struct {
	name                      string
	typ                       string
	user                      string
	execStartPre, execStop    [][]string
	execStart                 []string
	killMode                  string
	killSignal                syscall.Signal
	timeoutStart, timeoutStop time.Duration
	sendSIGKILL               bool
	notifyAccess              string
	raw                       map[string][]string // every [Service] key, for tests of hardening lines
}

var signalsByName = map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGKILL": syscall.SIGKILL, "SIGQUIT": syscall.SIGQUIT}

// parseUnit reads path for instance %i, rewriting the paths in subst
// (e.g. /usr/local/bin/ to the test's binaries) in command lines.
func parseUnit(path, instance string, subst map[string]string) (*unit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := &unit{name: filepath.Base(path) + ":" + instance, typ: "simple", killMode: "control-group",
		killSignal: syscall.SIGTERM, timeoutStart: 90 * time.Second, timeoutStop: 90 * time.Second,
		sendSIGKILL: true, raw: map[string][]string{}}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			section = line
			continue
		}
		if section != "[Service]" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: bad line %q", path, line)
		}
		v = strings.ReplaceAll(v, "%i", instance)
		u.raw[k] = append(u.raw[k], v)
		cmd := func() []string {
			for from, to := range subst {
				v = strings.ReplaceAll(v, from, to)
			}
			return strings.Fields(strings.TrimLeft(v, "-+@!"))
		}
		switch k {
		case "Type":
			u.typ = v
		case "User":
			u.user = v
		case "ExecStartPre":
			u.execStartPre = append(u.execStartPre, cmd())
		case "ExecStart":
			u.execStart = cmd()
		case "ExecStop":
			u.execStop = append(u.execStop, cmd())
		case "KillMode":
			u.killMode = v
		case "KillSignal":
			s, ok := signalsByName[v]
			if !ok {
				return nil, fmt.Errorf("%s: KillSignal=%s unknown to the test", path, v)
			}
			u.killSignal = s
		case "SendSIGKILL":
			u.sendSIGKILL = v == "yes" || v == "true"
		case "NotifyAccess":
			u.notifyAccess = v
		case "TimeoutStartSec", "TimeoutStopSec":
			d := 24 * time.Hour
			if v != "infinity" {
				if d, err = time.ParseDuration(v); err != nil {
					n, err2 := strconv.Atoi(v)
					if err2 != nil {
						return nil, fmt.Errorf("%s: %s=%s: %v", path, k, v, err)
					}
					d = time.Duration(n) * time.Second
				}
			}
			if k == "TimeoutStartSec" {
				u.timeoutStart = d
			} else {
				u.timeoutStop = d
			}
		}
	}
	if len(u.execStart) == 0 {
		return nil, fmt.Errorf("%s: no ExecStart", path)
	}
	return u, sc.Err()
}

// service is a running unit.
type service struct {
	u      *unit
	cgroup string // cgroup v2 directory holding every process of the service
	main   *exec.Cmd
	exited chan struct{}
	logf   *os.File
}

const cgroupRoot = "/sys/fs/cgroup/unified"

// cgroupV2 returns where cgroup v2 is mounted, or "" when the test cannot
// use one.
func cgroupV2() string {
	for _, p := range []string{cgroupRoot, "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
			if _, err := os.Stat(filepath.Join(p, "cgroup.controllers")); err == nil || p == cgroupRoot {
				return p
			}
		}
	}
	return ""
}

// credential runs a command as the unit's User=.
func (u *unit) credential() (*syscall.Credential, error) {
	if u.user == "" || u.user == "root" {
		return nil, nil
	}
	usr, err := user.Lookup(u.user)
	if err != nil {
		return nil, fmt.Errorf("%s: User=%s: %w", u.name, u.user, err)
	}
	uid, _ := strconv.Atoi(usr.Uid)
	gid, _ := strconv.Atoi(usr.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// command prepares argv inside the service's cgroup, as its user.
func (s *service) command(argv []string, env ...string) (*exec.Cmd, error) {
	cred, err := s.u.credential()
	if err != nil {
		return nil, err
	}
	cg, err := os.Open(s.cgroup)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = s.logf, s.logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred, UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	// The descriptor must live until the child is started.
	go func() { time.Sleep(10 * time.Second); cg.Close() }()
	return cmd, nil
}

// startService runs ExecStartPre lines (each must succeed), then
// ExecStart, and with Type=notify waits for READY=1 from the main process
// as systemd does before it calls the unit started.
func startService(t *testing.T, u *unit, logPath string) (*service, error) {
	t.Helper()
	root := cgroupV2()
	if root == "" {
		return nil, fmt.Errorf("no cgroup v2 mount")
	}
	cg := filepath.Join(root, fmt.Sprintf("phxgo-test-%s-%d", strings.NewReplacer("@", "_", ":", "_", ".", "_").Replace(u.name), time.Now().UnixNano()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	s := &service{u: u, cgroup: cg, logf: logf, exited: make(chan struct{})}
	for _, argv := range u.execStartPre {
		cmd, err := s.command(argv)
		if err != nil {
			return nil, err
		}
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%s: ExecStartPre %v: %w (see %s)", u.name, argv, err, logPath)
		}
	}
	var env []string
	var sock *net.UnixConn
	if u.typ == "notify" {
		path := filepath.Join(t.TempDir(), "notify.sock")
		if sock, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"}); err != nil {
			return nil, err
		}
		defer sock.Close()
		// NotifyAccess=main: systemd takes a notification only from the
		// main pid, which it learns from the sender's credentials.
		if raw, err := sock.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1) })
		}
		if u.user != "" {
			_ = os.Chmod(path, 0o777)
			_ = os.Chmod(filepath.Dir(path), 0o755)
		}
		env = append(env, "NOTIFY_SOCKET="+path)
	}
	cmd, err := s.command(u.execStart, env...)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s.main = cmd
	go func() { _ = cmd.Wait(); close(s.exited) }()
	if sock == nil {
		return s, nil
	}
	deadline := time.Now().Add(u.timeoutStart)
	buf := make([]byte, 4096)
	oob := make([]byte, syscall.CmsgSpace(syscall.SizeofUcred))
	for {
		_ = sock.SetReadDeadline(time.Now().Add(time.Second))
		k, oobn, _, _, err := sock.ReadMsgUnix(buf, oob)
		if err == nil && strings.Contains("\n"+string(buf[:k]), "\nREADY=1\n") {
			from := senderPid(oob[:oobn])
			if u.notifyAccess != "all" && from != cmd.Process.Pid {
				t.Logf("%s: READY from pid %d, not the main process %d: ignored (NotifyAccess=%s)", u.name, from, cmd.Process.Pid, u.notifyAccess)
				continue
			}
			t.Logf("%s: READY (%s)", u.name, strings.ReplaceAll(strings.TrimSpace(string(buf[:k])), "\n", "; "))
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%s: main process exited before READY=1 (see %s)", u.name, logPath)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: no READY=1 within TimeoutStartSec=%v", u.name, u.timeoutStart)
		}
	}
}

// senderPid reads the sender's pid from SCM_CREDENTIALS, 0 if absent.
func senderPid(oob []byte) int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if cred, err := syscall.ParseUnixCredentials(&m); err == nil {
			return int(cred.Pid)
		}
	}
	return 0
}

// procs lists the pids in the service's cgroup.
func (s *service) procs() []int {
	b, _ := os.ReadFile(filepath.Join(s.cgroup, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// stop does what `systemctl stop` does: ExecStop lines with $MAINPID,
// then the unit's KillSignal to the main process only (mixed, process) or
// to every process (control-group), up to TimeoutStopSec for the main
// process to exit, then SIGKILL to whatever is left in the cgroup
// (control-group, mixed). It returns the signals each leftover got, so a
// test can assert that no mariadbd was ever sent SIGTERM.
func (s *service) stop(ctx context.Context) (sigtermed []int, err error) {
	defer s.logf.Close()
	pid := s.main.Process.Pid
	for _, argv := range s.u.execStop {
		cmd, err := s.command(argv, "MAINPID="+strconv.Itoa(pid))
		if err != nil {
			return nil, err
		}
		_ = cmd.Run()
	}
	switch s.u.killMode {
	case "control-group":
		for _, p := range s.procs() {
			_ = syscall.Kill(p, s.u.killSignal)
			if p != pid {
				sigtermed = append(sigtermed, p)
			}
		}
	case "mixed", "process":
		_ = syscall.Kill(pid, s.u.killSignal)
	case "none":
	default:
		return nil, fmt.Errorf("KillMode=%s unknown to the test", s.u.killMode)
	}
	select {
	case <-s.exited:
	case <-time.After(s.u.timeoutStop):
	case <-ctx.Done():
		return sigtermed, ctx.Err()
	}
	if s.u.sendSIGKILL && (s.u.killMode == "control-group" || s.u.killMode == "mixed") {
		for _, p := range s.procs() {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	for len(s.procs()) > 0 {
		select {
		case <-ctx.Done():
			return sigtermed, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	<-s.exited
	// The kernel lets an emptied cgroup go a moment after its last
	// process is reaped.
	for {
		err := os.Remove(s.cgroup)
		if err == nil || ctx.Err() != nil {
			return sigtermed, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill is a crash of the main process (kill -9), after which systemd
// cleans up the rest of the cgroup as a stop would.
func (s *service) crash(ctx context.Context) ([]int, error) {
	_ = s.main.Process.Signal(syscall.SIGKILL)
	<-s.exited
	return s.stop(ctx)
}
