package mysqld

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/cpuprio"
	"phxgo/binlogd/rawnet"
)

var (
	// ErrNotInstalled means mariadbd or mariadb-install-db is missing.
	ErrNotInstalled = errors.New("mysqld: MariaDB is not installed (run scripts/install-deps.sh)")
	// ErrNotRunning means the instance has no live mariadbd process.
	ErrNotRunning = errors.New("mysqld: not running")
)

// Options describe one MariaDB instance.
type Options struct {
	Dir      string // instance root; the datadir is Dir/data
	Host     string // address to bind, default 127.0.0.1
	Port     int
	ServerID uint32
	// ApplyThreads > 0 makes the server, as a replica, apply in parallel
	// with that many worker threads (slave_parallel_threads, optimistic
	// mode: transactions run in parallel and commit in binlog order; a
	// conflict rolls the later one back and retries it). 0: one SQL
	// thread, MariaDB's default.
	ApplyThreads int
	// TLS, when set, makes the server offer TLS with the node's
	// certificate (tls.go): copies readable by the server's OS user and
	// ssl_cert/ssl_key/ssl_ca in my.cnf. Zero: no TLS (have_ssl DISABLED).
	TLS TLSFiles
	// Extra my.cnf lines under [mysqld], e.g. "innodb_buffer_pool_size=256M".
	Extra []string
	// Nice, when set, is mariadbd's nice value (binlogd/cpuprio): binlogd
	// runs at a lower one, so MariaDB's threads cannot starve it. Nil:
	// mariadbd inherits its starter's.
	Nice   *int
	Logger *slog.Logger
}

// Instance is one local mariadbd.
type Instance struct {
	opts Options

	mu   sync.Mutex
	cmd  *exec.Cmd
	pid  int           // of cmd, or of an adopted mariadbd started by an earlier binlogd
	done chan struct{} // closed when that process exits
}

// New returns an instance handle; Init creates the datadir if needed.
func New(opts Options) (*Instance, error) {
	if opts.Dir == "" || opts.Port <= 0 || opts.ServerID == 0 {
		return nil, fmt.Errorf("mysqld: Dir, Port and ServerID are required (got %q, %d, %d)", opts.Dir, opts.Port, opts.ServerID)
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	abs, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = abs
	return &Instance{opts: opts}, nil
}

func (i *Instance) DataDir() string    { return filepath.Join(i.opts.Dir, "data") }
func (i *Instance) Socket() string     { return filepath.Join(i.opts.Dir, "mysqld.sock") }
func (i *Instance) ConfigFile() string { return filepath.Join(i.opts.Dir, "my.cnf") }
func (i *Instance) ErrorLog() string   { return filepath.Join(i.opts.Dir, "error.log") }
func (i *Instance) Addr() string       { return net.JoinHostPort(i.opts.Host, strconv.Itoa(i.opts.Port)) }
func (i *Instance) Port() int          { return i.opts.Port }
func (i *Instance) ServerID() uint32   { return i.opts.ServerID }

// BinlogIndex is the path of the binlog index file (binlog basename "binlog").
func (i *Instance) BinlogIndex() string { return filepath.Join(i.DataDir(), "binlog.index") }

func (i *Instance) writeConfig(su *osUser) error {
	var b strings.Builder
	fmt.Fprintf(&b, "[mysqld]\n")
	fmt.Fprintf(&b, "datadir=%s\nsocket=%s\nport=%d\nbind-address=%s\nserver-id=%d\n",
		i.DataDir(), i.Socket(), i.opts.Port, i.opts.Host, i.opts.ServerID)
	// A private tmpdir: other programs cleaning /tmp must not delete the
	// server's temporary tables under it.
	fmt.Fprintf(&b, "pid-file=%s\nlog-error=%s\ntmpdir=%s\n", i.PidFile(), i.ErrorLog(), i.TmpDir())
	if su != nil {
		fmt.Fprintf(&b, "user=%s\n", su.name) // never root: see ServerOSUser
	}
	// No file import/export outside FilesDir. LOAD DATA LOCAL is on: the
	// data comes from the client (what an INSERT could send), and the
	// risk of LOCAL, a server asking for a client's file, is the client's
	// to refuse (sqlproxy only relays; README "Security"). Only InnoDB
	// tables (MyISAM, Aria, MEMORY... writes are visible and durable
	// before the semi-sync ACK, and a binlog cut cannot undo them). NO_ENGINE_SUBSTITUTION makes another ENGINE= an
	// error instead of a silent switch to InnoDB.
	fmt.Fprintf(&b, "secure_file_priv=%s\nlocal_infile=ON\nenforce_storage_engine=InnoDB\n", i.FilesDir())
	b.WriteString("sql_mode=STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION\n")
	b.WriteString(`log-bin=binlog
log-bin-index=binlog.index
relay-log=relay
binlog_format=ROW
sync_binlog=1
innodb_flush_log_at_trx_commit=1
gtid_strict_mode=ON
gtid_domain_id=0
log_slave_updates=ON
read_only=ON
skip-slave-start
skip-name-resolve
rpl_semi_sync_master_enabled=OFF
rpl_semi_sync_master_wait_point=AFTER_SYNC
rpl_semi_sync_master_wait_no_slave=ON
rpl_semi_sync_master_timeout=18446744073709551615
rpl_semi_sync_slave_enabled=OFF
slave_net_timeout=10
max_allowed_packet=1G
slave_max_allowed_packet=1G
innodb_buffer_pool_size=64M
innodb_log_file_size=64M
performance_schema=OFF
max_connections=500
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci
`)
	if i.opts.TLS.Enabled() {
		// TLS offered, not required: local tools, tests and benches
		// connect over plain TCP (no require_secure_transport).
		fmt.Fprintf(&b, "ssl_cert=%s\nssl_key=%s\nssl_ca=%s\n", i.tlsCopy(tlsCert), i.tlsCopy(tlsKey), i.tlsCopy(tlsCA))
	}
	if i.opts.ApplyThreads > 0 {
		fmt.Fprintf(&b, "slave_parallel_threads=%d\nslave_parallel_mode=optimistic\n", i.opts.ApplyThreads)
	}
	for _, l := range i.opts.Extra {
		b.WriteString(l + "\n")
	}
	return os.WriteFile(i.ConfigFile(), []byte(b.String()), 0o644)
}

// Init writes my.cnf and, when the datadir is empty, runs
// mariadb-install-db. It is idempotent.
func (i *Instance) Init(ctx context.Context) error {
	if _, err := exec.LookPath("mariadb-install-db"); err != nil {
		return ErrNotInstalled
	}
	su, err := serverUser()
	if err != nil {
		return err
	}
	if err := i.prepareDirs(su); err != nil {
		return fmt.Errorf("mysqld: prepare %s: %w", i.opts.Dir, err)
	}
	if err := i.copyTLS(su); err != nil {
		return err
	}
	if err := i.writeConfig(su); err != nil {
		return fmt.Errorf("mysqld: write config: %w", err)
	}
	if _, err := os.Stat(filepath.Join(i.DataDir(), "mysql")); err == nil {
		return nil
	}
	// root@localhost and the admin account (AdminUser) are created
	// IDENTIFIED VIA unix_socket: no account without a password exists
	// at any moment, and none is reachable over TCP.
	osUser := AdminUser()
	if su != nil {
		osUser = su.name
	}
	cmd := exec.CommandContext(ctx, "mariadb-install-db",
		"--defaults-file="+i.ConfigFile(), "--user="+osUser,
		"--auth-root-authentication-method=socket", "--auth-root-socket-user="+AdminUser(), "--skip-test-db")
	var outBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	err = cpuprio.RunChild(cmd) // at mysql_nice, like the server it prepares
	out := outBuf.Bytes()
	if err != nil {
		return fmt.Errorf("mysqld: mariadb-install-db in %s: %w\n%s", i.DataDir(), err, tail(out, 2000))
	}
	if su != nil { // install-db leaves a file or two owned by root
		if err := chownTree(i.DataDir(), su); err != nil {
			return err
		}
	}
	return nil
}

func mariadbdPath() (string, error) {
	for _, p := range []string{"mariadbd", "/usr/sbin/mariadbd", "mysqld", "/usr/sbin/mysqld"} {
		if path, err := exec.LookPath(p); err == nil {
			return path, nil
		}
	}
	return "", ErrNotInstalled
}

// Start launches mariadbd and waits until it accepts connections.
// If the instance is already running it returns nil.
func (i *Instance) Start(ctx context.Context) error {
	i.mu.Lock()
	if i.pid != 0 {
		i.mu.Unlock()
		return nil
	}
	bin, err := mariadbdPath()
	if err != nil {
		i.mu.Unlock()
		return err
	}
	logFrom := i.logSize()
	cmd := exec.Command(bin, "--defaults-file="+i.ConfigFile())
	// Own process group: a Ctrl-C to the parent must not reach mariadbd
	// before binlogd decides how to stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// mariadbd speaks sd_notify itself ("Taking your SQL requests
	// now..."); under binlogd's Type=notify unit that would tell systemd
	// the node is ready before binlogd knows it is.
	cmd.Env = withoutEnv(os.Environ(), "NOTIFY_SOCKET")
	if err := i.startCmd(cmd); err != nil {
		i.mu.Unlock()
		return fmt.Errorf("mysqld: start %s: %w", bin, err)
	}
	done := make(chan struct{})
	i.cmd, i.pid, i.done = cmd, cmd.Process.Pid, done
	i.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		i.exited(cmd.Process.Pid, done)
	}()
	i.opts.Logger.Info("mariadbd started", "pid", cmd.Process.Pid, "addr", i.Addr(), "dir", i.opts.Dir)
	return i.waitReady(ctx, done, logFrom)
}

// startCmd starts cmd at Options.Nice. A nice value below this
// process's needs CAP_SYS_NICE: without it mariadbd starts at this
// process's value, with a warning.
func (i *Instance) startCmd(cmd *exec.Cmd) error {
	if i.opts.Nice == nil {
		return cmd.Start()
	}
	err := cpuprio.Start(cmd, *i.opts.Nice)
	if errors.Is(err, cpuprio.ErrPermission) {
		// cpuprio.Start failed before forking: cmd is unused.
		i.opts.Logger.Warn("mariadbd starts at binlogd's own nice value", "wanted_nice", *i.opts.Nice, "err", err)
		return cmd.Start()
	}
	return err
}

// waitReady returns once mariadbd answers; if it exits first, the error
// quotes its error log and wraps ErrUnrecoverable when the lines this
// start wrote (from logFrom on) show a datadir InnoDB cannot recover.
func (i *Instance) waitReady(ctx context.Context, done <-chan struct{}, logFrom int64) error {
	db, err := i.open("")
	if err != nil {
		return err
	}
	defer db.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := db.PingContext(pctx)
		cancel()
		if err == nil {
			return i.Harden(ctx)
		}
		if adopted, aerr := i.adoptLegacyAdmin(ctx, err); aerr != nil {
			return aerr
		} else if adopted {
			continue
		}
		select {
		case <-done:
			if err := unrecoverableIn(i.logSince(logFrom)); err != nil {
				return fmt.Errorf("mysqld: mariadbd exited during start (see %s): %w", i.ErrorLog(), err)
			}
			return fmt.Errorf("mysqld: mariadbd exited during start; see %s:\n%s", i.ErrorLog(), i.errorLogTail())
		case <-ctx.Done():
			return fmt.Errorf("mysqld: waiting for %s: %w (last error: %v)", i.Addr(), ctx.Err(), err)
		case <-tick.C:
		}
	}
}

func (i *Instance) errorLogTail() string {
	b, _ := os.ReadFile(i.ErrorLog())
	return tail(b, 3000)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// Pid is the running mariadbd's pid, or 0.
func (i *Instance) Pid() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.pid
}

// Done is closed when the current mariadbd exits; when none runs, it is
// already closed (a caller that started one and waits on Done never hangs
// because it died in between).
func (i *Instance) Done() <-chan struct{} {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.pid == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return i.done
}

// Kill sends SIGKILL and waits for the process to exit. A killed master
// loses nothing acknowledged: commits waiting for the semi-sync ACK are
// cut by recovery, never committed by a graceful shutdown.
func (i *Instance) Kill() error { return i.signalAndWait(syscall.SIGKILL, 30*time.Second) }

// Shutdown stops mariadbd gracefully (SIGTERM). Never call it on a master
// with commits waiting for an ACK: InnoDB would commit them (DESIGN.md).
func (i *Instance) Shutdown(timeout time.Duration) error {
	err := i.signalAndWait(syscall.SIGTERM, timeout)
	if err != nil {
		return i.Kill()
	}
	return nil
}

// Signal sends sig (e.g. SIGSTOP/SIGCONT) to the running mariadbd.
func (i *Instance) Signal(sig syscall.Signal) error {
	i.mu.Lock()
	pid := i.pid
	i.mu.Unlock()
	if pid == 0 {
		return ErrNotRunning
	}
	return syscall.Kill(pid, sig)
}

func (i *Instance) signalAndWait(sig syscall.Signal, timeout time.Duration) error {
	i.mu.Lock()
	pid, done := i.pid, i.done
	i.mu.Unlock()
	if pid == 0 {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGCONT) // a paused process cannot exit
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("mysqld: pid %d did not exit within %v after %v", pid, timeout, sig)
	}
}

// AdminDSN is a go-sql-driver DSN for the admin account (AdminUser,
// unix_socket authentication) over the instance's unix socket.
func (i *Instance) AdminDSN(db string) string {
	cfg := i.dsnConfig(AdminUser(), db)
	return cfg.FormatDSN()
}

func (i *Instance) dsnConfig(user, db string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User = user
	cfg.Net = "unix"
	cfg.Addr = i.Socket()
	cfg.DBName = db
	cfg.InterpolateParams = true
	cfg.MultiStatements = true
	cfg.Timeout = 5 * time.Second
	return cfg
}

func (i *Instance) open(db string) (*sql.DB, error) {
	cfg := i.dsnConfig(AdminUser(), db)
	// Role control and status polls query several times a second: a raw
	// socket (package rawnet) keeps them from waking the runtime's sysmon.
	cfg.DialFunc = rawnet.DialContext
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	d := sql.OpenDB(conn)
	d.SetMaxIdleConns(2)
	return d, nil
}

// DB opens an admin connection pool (AdminUser) over the unix socket.
func (i *Instance) DB(db string) (*sql.DB, error) { return i.open(db) }

// TmpDir is the server's private tmpdir: other programs cleaning /tmp must
// not delete the server's temporary tables.
func (i *Instance) TmpDir() string { return filepath.Join(i.opts.Dir, "tmp") }

// withoutEnv returns env without the variable named key.
func withoutEnv(env []string, key string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}
