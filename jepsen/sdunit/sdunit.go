package sdunit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"phxgo/binlogd/cpuprio"
)

// A small stand-in for systemd, enough to run the project's units the way
// systemd would: the unit's own command lines (ExecStartPre, ExecStart,
// ExecStop), its User=, Type=notify readiness over a notification socket,
// and its stop procedure (KillMode, KillSignal, TimeoutStopSec, the final
// SIGKILL) applied to a real cgroup (v2) that holds every process the
// service starts, as systemd's own does. No systemd runs in the test
// machines, and a test that only read the unit file could not show what
// its lines do to a node.

// Unit is the [Service] part of a unit file, specifiers resolved.
type Unit struct {
	Name                      string
	Type                      string
	User                      string
	ExecStartPre, ExecStop    [][]string
	ExecStopPost              [][]string // run with $SERVICE_RESULT after the main process is gone
	ExecStart                 []string
	KillMode                  string
	KillSignal                syscall.Signal
	TimeoutStart, TimeoutStop time.Duration
	SendSIGKILL               bool
	NotifyAccess              string
	Nice                      *int                // Nice=: every process the unit starts runs at it
	Raw                       map[string][]string // every [Service] key, for tests of hardening lines
	// Prefix, when set, is put before every command line, e.g. nsenter
	// into a test host's network namespace with the unit's user
	// ("nsenter --net=/run/netns/h1 -S 102 -G 105 --"); the unit's User=
	// is then the prefix's business.
	Prefix []string
	// Environment and EnvironmentFiles are the unit's Environment= lines
	// and EnvironmentFile= paths ("-" prefix: optional), read at Start and
	// expanded in command lines as systemd does (env.go).
	Environment      []string
	EnvironmentFiles []string
}

var signalsByName = map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGKILL": syscall.SIGKILL, "SIGQUIT": syscall.SIGQUIT}

// Parse reads path for instance %i, rewriting the paths in subst
// (e.g. /usr/local/bin/ to the test's binaries) in command lines.
func Parse(path, instance string, subst map[string]string) (*Unit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := &Unit{Name: filepath.Base(path) + ":" + instance, Type: "simple", KillMode: "control-group",
		KillSignal: syscall.SIGTERM, TimeoutStart: 90 * time.Second, TimeoutStop: 90 * time.Second,
		SendSIGKILL: true, Raw: map[string][]string{}}
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
		u.Raw[k] = append(u.Raw[k], v)
		substPaths := func() string {
			for from, to := range subst {
				v = strings.ReplaceAll(v, from, to)
			}
			return v
		}
		cmd := func() []string { return splitCommand(strings.TrimLeft(substPaths(), "-+@!")) }
		switch k {
		case "Environment":
			u.Environment = append(u.Environment, v)
		case "EnvironmentFile":
			u.EnvironmentFiles = append(u.EnvironmentFiles, substPaths())
		case "Type":
			u.Type = v
		case "User":
			u.User = v
		case "ExecStartPre":
			u.ExecStartPre = append(u.ExecStartPre, cmd())
		case "ExecStart":
			u.ExecStart = cmd()
		case "ExecStop":
			u.ExecStop = append(u.ExecStop, cmd())
		case "ExecStopPost":
			u.ExecStopPost = append(u.ExecStopPost, cmd())
		case "KillMode":
			u.KillMode = v
		case "KillSignal":
			s, ok := signalsByName[v]
			if !ok {
				return nil, fmt.Errorf("%s: KillSignal=%s unknown to the test", path, v)
			}
			u.KillSignal = s
		case "SendSIGKILL":
			u.SendSIGKILL = v == "yes" || v == "true"
		case "NotifyAccess":
			u.NotifyAccess = v
		case "Nice":
			n, err := strconv.Atoi(v)
			if err != nil || n < -20 || n > 19 {
				return nil, fmt.Errorf("%s: Nice=%s: want -20..19", path, v)
			}
			u.Nice = &n
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
				u.TimeoutStart = d
			} else {
				u.TimeoutStop = d
			}
		}
	}
	if len(u.ExecStart) == 0 {
		return nil, fmt.Errorf("%s: no ExecStart", path)
	}
	return u, sc.Err()
}

// Service is a running unit.
type Service struct {
	u      *Unit
	cgroup string // cgroup v2 directory holding every process of the service
	main   *exec.Cmd
	exited chan struct{}
	result string   // SERVICE_RESULT once the main process is gone: success, exit-code, signal
	out    *os.File // the service's stdout and stderr (its journal)
	env    map[string]string
}

const cgroupRoot = "/sys/fs/cgroup/unified"

// CgroupV2 returns where cgroup v2 is mounted, or "" when the test cannot
// use one.
func CgroupV2() string {
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
func (u *Unit) credential() (*syscall.Credential, error) {
	if u.User == "" || u.User == "root" {
		return nil, nil
	}
	usr, err := user.Lookup(u.User)
	if err != nil {
		return nil, fmt.Errorf("%s: User=%s: %w", u.Name, u.User, err)
	}
	uid, _ := strconv.Atoi(usr.Uid)
	gid, _ := strconv.Atoi(usr.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// command prepares argv inside the service's cgroup, as its user.
func (s *Service) command(argv []string, env ...string) (*exec.Cmd, error) {
	var cred *syscall.Credential
	argv = expand(argv, s.env)
	if len(s.u.Prefix) > 0 {
		argv = append(append([]string(nil), s.u.Prefix...), argv...)
	} else {
		var err error
		if cred, err = s.u.credential(); err != nil {
			return nil, err
		}
	}
	cg, err := os.Open(s.cgroup)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), envList(s.env)...), env...)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred, UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	// The descriptor must live until the child is started.
	go func() { time.Sleep(10 * time.Second); cg.Close() }()
	return cmd, nil
}

// start starts cmd at the unit's Nice=, as systemd (root) does. A test
// process that may not lower nice values (root without CAP_SYS_NICE in
// a container) starts it at its own instead, where systemd would fail
// the unit: callers that check priorities test cpuprio.CanSet first.
func (s *Service) start(cmd *exec.Cmd) error {
	if s.u.Nice == nil {
		return cmd.Start()
	}
	err := cpuprio.Start(cmd, *s.u.Nice)
	if errors.Is(err, cpuprio.ErrPermission) {
		return cmd.Start() // refused before the fork: cmd is unused
	}
	return err
}

func (s *Service) run(cmd *exec.Cmd) error {
	if err := s.start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// Start runs ExecStartPre lines (each must succeed), then
// ExecStart, and with Type=notify waits for READY=1 from the main process
// as systemd does before it calls the unit started.
func Start(ctx context.Context, u *Unit, logPath string, logf func(format string, args ...any)) (_ *Service, err error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	root := CgroupV2()
	if root == "" {
		return nil, fmt.Errorf("no cgroup v2 mount")
	}
	cg := filepath.Join(root, fmt.Sprintf("phxgo-test-%s-%d", strings.NewReplacer("@", "_", ":", "_", ".", "_").Replace(u.Name), time.Now().UnixNano()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		return nil, err
	}
	// A unit that fails to start leaves nothing running, as systemd's
	// cleanup after a failed start does.
	defer func() {
		if err != nil {
			removeCgroup(cg)
		}
	}()
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	s := &Service{u: u, cgroup: cg, out: out, exited: make(chan struct{})}
	if s.env, err = u.environment(); err != nil {
		out.Close()
		_ = os.Remove(cg)
		return nil, err
	}
	for _, argv := range u.ExecStartPre {
		cmd, err := s.command(argv)
		if err != nil {
			return nil, err
		}
		if err := s.run(cmd); err != nil {
			return nil, fmt.Errorf("%s: ExecStartPre %v: %w (see %s)", u.Name, argv, err, logPath)
		}
	}
	var env []string
	var sock *net.UnixConn
	if u.Type == "notify" {
		dir, err := os.MkdirTemp("", "sdunit-notify-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "notify.sock")
		if sock, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"}); err != nil {
			return nil, err
		}
		defer sock.Close()
		// NotifyAccess=main: systemd takes a notification only from the
		// main pid, which it learns from the sender's credentials.
		if raw, err := sock.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1) })
		}
		if u.User != "" {
			_ = os.Chmod(path, 0o777)
			_ = os.Chmod(filepath.Dir(path), 0o755)
		}
		env = append(env, "NOTIFY_SOCKET="+path)
	}
	cmd, err := s.command(u.ExecStart, env...)
	if err != nil {
		return nil, err
	}
	if err := s.start(cmd); err != nil {
		return nil, err
	}
	s.main = cmd
	go func() {
		s.result = "success"
		if err := cmd.Wait(); err != nil {
			s.result = "exit-code"
			if ee, ok := err.(*exec.ExitError); ok {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					s.result = "signal"
				}
			}
		}
		close(s.exited)
	}()
	if sock == nil {
		return s, nil
	}
	deadline := time.Now().Add(u.TimeoutStart)
	buf := make([]byte, 4096)
	oob := make([]byte, syscall.CmsgSpace(syscall.SizeofUcred))
	for {
		_ = sock.SetReadDeadline(time.Now().Add(time.Second))
		k, oobn, _, _, err := sock.ReadMsgUnix(buf, oob)
		if err == nil && strings.Contains("\n"+string(buf[:k]), "\nREADY=1\n") {
			from := senderPid(oob[:oobn])
			if u.NotifyAccess != "all" && from != cmd.Process.Pid {
				logf("%s: READY from pid %d, not the main process %d: ignored (NotifyAccess=%s)", u.Name, from, cmd.Process.Pid, u.NotifyAccess)
				continue
			}
			logf("%s: READY (%s)", u.Name, strings.ReplaceAll(strings.TrimSpace(string(buf[:k])), "\n", "; "))
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%s: main process exited before READY=1 (see %s)", u.Name, logPath)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: no READY=1 within TimeoutStartSec=%v", u.Name, u.TimeoutStart)
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

// Procs lists the pids in the service's cgroup.
func (s *Service) Procs() []int {
	b, _ := os.ReadFile(filepath.Join(s.cgroup, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Stop does what `systemctl stop` does: ExecStop lines with $MAINPID,
// then the unit's KillSignal to the main process only (mixed, process) or
// to every process (control-group), up to TimeoutStopSec for the main
// process to exit, then SIGKILL to whatever is left in the cgroup
// (control-group, mixed). It returns the signals each leftover got, so a
// test can assert that no mariadbd was ever sent SIGTERM.
func (s *Service) Stop(ctx context.Context) (sigtermed []int, err error) {
	defer s.out.Close()
	pid := s.main.Process.Pid
	for _, argv := range s.u.ExecStop {
		cmd, err := s.command(argv, "MAINPID="+strconv.Itoa(pid))
		if err != nil {
			return nil, err
		}
		_ = s.run(cmd)
	}
	switch s.u.KillMode {
	case "control-group":
		for _, p := range s.Procs() {
			_ = syscall.Kill(p, s.u.KillSignal)
			if p != pid {
				sigtermed = append(sigtermed, p)
			}
		}
	case "mixed", "process":
		_ = syscall.Kill(pid, s.u.KillSignal)
	case "none":
	default:
		return nil, fmt.Errorf("KillMode=%s unknown to the test", s.u.KillMode)
	}
	timedOut := false
	select {
	case <-s.exited:
	case <-time.After(s.u.TimeoutStop):
		timedOut = true
	case <-ctx.Done():
		return sigtermed, ctx.Err()
	}
	if s.u.SendSIGKILL && (s.u.KillMode == "control-group" || s.u.KillMode == "mixed") {
		for _, p := range s.Procs() {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	if s.u.KillMode == "process" || s.u.KillMode == "none" {
		// systemd kills only the main process and leaves the rest (e.g.
		// a mariadbd binlogd hands off) in the cgroup, running;
		// ExecStopPost then sees how the main process ended.
		if timedOut && s.u.SendSIGKILL {
			_ = s.main.Process.Signal(syscall.SIGKILL)
		}
		<-s.exited
		result := s.result
		if timedOut {
			result = "timeout"
		}
		s.stopPost(result)
		if len(s.Procs()) > 0 {
			keepLeftover(s.cgroup)
			return sigtermed, nil
		}
	}
	for len(s.Procs()) > 0 {
		select {
		case <-ctx.Done():
			return sigtermed, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	<-s.exited
	if s.u.KillMode != "process" && s.u.KillMode != "none" {
		s.stopPost(s.result)
	}
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

// Crash is a crash of the main process (kill -9), after which systemd
// cleans up the rest of the cgroup as a stop would.
func (s *Service) Crash(ctx context.Context) ([]int, error) {
	_ = s.main.Process.Signal(syscall.SIGKILL)
	<-s.exited
	return s.Stop(ctx)
}

// removeCgroup SIGKILLs whatever is left in cg and removes it (bounded:
// a failed start must not hang the test).
func removeCgroup(cg string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		if os.Remove(cg) == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
