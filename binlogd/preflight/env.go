package preflight

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"phxgo/binlogd/config"
)

// Env is everything the checks read from outside: the config, the host's
// files (under Root), the accounts, the programs they run and the limits.
// NewEnv fills it from the running host; tests build one over temp dirs.
type Env struct {
	// ConfigPath is the config file as given on the command line.
	ConfigPath string
	// Config is set by CheckConfig: the loaded config, or, when it failed
	// validation, the file read without validation (so the other checks
	// can still look at its paths and addresses); nil when unreadable.
	Config *config.Config
	// Root prefixes the kernel's and the system's files (/proc, /sys,
	// /run); "" is the real root.
	Root string
	// Runner is the account binlogd runs as: the one running the check.
	Runner Account
	// MySQL is the OS account mariadbd runs as when binlogd is root;
	// nil when no such account exists.
	MySQL *Account
	// Run runs a program and returns its standard output; tests stub it.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
	// LookPath finds a program (exec.LookPath).
	LookPath func(file string) (string, error)
	// Now is the time certificates are checked against.
	Now    time.Time
	Limits Limits
}

// Limits are the thresholds of the disk and certificate checks.
type Limits struct {
	WarnFreeBytes uint64        // free space below this is a warn (10 GiB)
	FailFreeBytes uint64        // below this a FAIL (1 GiB)
	FsyncSamples  int           // write+fdatasync rounds per directory (64)
	FsyncWarnP99  time.Duration // p99 above this is a warn (10ms)
	CertWarn      time.Duration // a certificate expiring sooner is a warn (30 days)
}

// DefaultLimits are the thresholds binlogd check uses without flags.
func DefaultLimits() Limits {
	return Limits{
		WarnFreeBytes: 10 << 30,
		FailFreeBytes: 1 << 30,
		FsyncSamples:  64,
		FsyncWarnP99:  10 * time.Millisecond,
		CertWarn:      30 * 24 * time.Hour,
	}
}

// Account is an OS user as the permission checks need it.
type Account struct {
	Name   string
	UID    int
	GID    int
	Groups []int // supplementary group ids, including GID
}

// MySQLUser is the OS account mariadbd runs as when binlogd is root.
const MySQLUser = "mysql"

// runTimeout bounds every program a check runs (mariadbd --version,
// timedatectl, chronyc): a hung one must not hang the preflight.
const runTimeout = 5 * time.Second

// NewEnv is the Env of this host for the config file at path (made
// absolute, so every path in the report is).
func NewEnv(path string) *Env {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	e := &Env{
		ConfigPath: path,
		LookPath:   exec.LookPath,
		Run:        runProgram,
		Now:        time.Now(),
		Limits:     DefaultLimits(),
	}
	if u, err := user.LookupId(strconv.Itoa(os.Geteuid())); err == nil {
		e.Runner = accountOf(u)
	} else {
		e.Runner = Account{Name: strconv.Itoa(os.Geteuid()), UID: os.Geteuid(), GID: os.Getegid(), Groups: []int{os.Getegid()}}
	}
	if u, err := user.Lookup(MySQLUser); err == nil {
		a := accountOf(u)
		e.MySQL = &a
	}
	return e
}

func accountOf(u *user.User) Account {
	a := Account{Name: u.Username}
	a.UID, _ = strconv.Atoi(u.Uid)
	a.GID, _ = strconv.Atoi(u.Gid)
	a.Groups = []int{a.GID}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.Atoi(g); err == nil && n != a.GID {
				a.Groups = append(a.Groups, n)
			}
		}
	}
	return a
}

func runProgram(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return out, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// sys is a host path under Root.
func (e *Env) sys(path string) string {
	if e.Root == "" {
		return path
	}
	return filepath.Join(e.Root, path)
}

// mariadbdUser is the account mariadbd runs as: mysql when binlogd is
// root (binlogd/mysqld drops to it), else binlogd's own.
func (e *Env) mariadbdUser() (Account, bool) {
	if e.Runner.UID != 0 {
		return e.Runner, true
	}
	if e.MySQL == nil {
		return Account{}, false
	}
	return *e.MySQL, true
}
