package lazyfs

// TestInnoDBCrashRepro asks whose bug issue 20's finding is: a MariaDB
// 10.11 datadir that, after a crash during InnoDB crash recovery, never
// starts again ("Missing FILE_CREATE, FILE_DELETE or FILE_MODIFY before
// FILE_CHECKPOINT", "Data structure corruption"). It drives a plain
// mariadbd (no phxgo) through rounds of
//
//	full start (recovery) -> write load -> kill -9 [-> drop]
//	-> start, kill -9 at a random point of its recovery [-> drop] (1-3 times)
//
// on ext4 (kill -9 only: the page cache survives) or on lazyfs (drop:
// every write not fsynced is lost). It is long and needs mariadbd, so it
// runs only when asked: scripts/innodb-crash-repro/run.sh, or
//
//	INNODB_REPRO=1 INNODB_REPRO_MODE=lazyfs go test ./jepsen/lazyfs/ -run TestInnoDBCrashRepro -v -timeout 0
//
// Knobs (environment): INNODB_REPRO_MODE ext4|lazyfs, INNODB_REPRO_ITER
// rounds, INNODB_REPRO_LOAD seconds of load per round, INNODB_REPRO_SEED,
// INNODB_REPRO_LOGSIZE (innodb_log_file_size), INNODB_REPRO_LOGBUF
// (innodb_log_file_buffering: ON as lazyfs forces), INNODB_REPRO_KEEP (copy
// the datadir there when a start fails), INNODB_REPRO_STRACE (a file:
// the starts that get killed run under strace -f writing there),
// INNODB_REPRO_DIR (work directory; default a temporary one).

import (
	"database/sql"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sys/unix"
)

// reproPhases of a start, in the order the error log shows them, each
// with the lines that mark it; a kill is counted under the last one seen.
// The redo log is opened buffered on FUSE ("Buffered log writes") and,
// by default, with O_DIRECT on ext4 ("File system buffers for log
// disabled").
var reproPhases = []struct{ name, mark, alt string }{
	{"buffer pool", "Completed initialization of buffer pool", ""},
	{"log opened", "Buffered log writes", "File system buffers for log disabled"},
	{"crash recovery", "Starting crash recovery", ""},
	{"end of log found", "End of log at LSN", ""},
	{"applying", "To recover:", ""},
	{"rollback segments", "rollback segments are active", ""},
	{"ready", "ready for connections", ""},
}

func reproEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func reproInt(t *testing.T, name string, def int) int {
	v, err := strconv.Atoi(reproEnv(name, strconv.Itoa(def)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// reproServer is one mariadbd datadir and the process running on it.
type reproServer struct {
	t              *testing.T
	dir, data      string // work dir (ext4), datadir (maybe on lazyfs)
	cnf, errLog    string
	sock           string
	strace         string
	cmd            *exec.Cmd
	exited         chan struct{}
	logOff         int64 // error log size when the current start began
	startsToReady  []time.Duration
	phaseKills     map[string]int
	starts, failed int
}

func (s *reproServer) writeCnf(logSize string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// Slow recovery on purpose: a big redo log, many dirty pages, and
	// page flushing throttled so the checkpoint lags far behind.
	cnf := fmt.Sprintf(`[mysqld]
user=root
datadir=%s
socket=%s
port=%d
bind-address=127.0.0.1
pid-file=%s
log-error=%s
tmpdir=%s
server_id=1
log_bin=binlog
binlog_format=ROW
sync_binlog=1
innodb_flush_log_at_trx_commit=1
innodb_buffer_pool_size=256M
innodb_log_file_size=%s
innodb_max_dirty_pages_pct=99
innodb_max_dirty_pages_pct_lwm=0
innodb_adaptive_flushing=OFF
innodb_io_capacity=100
innodb_io_capacity_max=100
innodb_flush_neighbors=0
performance_schema=OFF
skip-name-resolve
`, s.data, s.sock, port, filepath.Join(s.dir, "mysqld.pid"), s.errLog, s.dir, logSize)
	if b := os.Getenv("INNODB_REPRO_LOGBUF"); b != "" {
		// ON: the redo log through the page cache, as on FUSE.
		cnf += "innodb_log_file_buffering=" + b + "\n"
	}
	if err := os.WriteFile(s.cnf, []byte(cnf), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *reproServer) install() {
	out, err := exec.Command("mariadb-install-db", "--defaults-file="+s.cnf, "--user=root",
		"--auth-root-authentication-method=socket", "--skip-test-db").CombinedOutput()
	if err != nil {
		s.t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
}

// start launches mariadbd, under strace when asked (INNODB_REPRO_STRACE:
// every start but the first, one file per start).
func (s *reproServer) start(traced bool) {
	st, err := os.Stat(s.errLog)
	s.logOff = 0
	if err == nil {
		s.logOff = st.Size()
	}
	args := []string{"mariadbd", "--defaults-file=" + s.cnf}
	if traced && s.strace != "" {
		args = append([]string{"strace", "-f", "-tt", "-y", "-o", fmt.Sprintf("%s.%02d", s.strace, s.starts),
			"-e", "trace=openat,pwrite64,pwritev,pwritev2,write,fsync,fdatasync,fcntl,fallocate,ftruncate,rename,io_submit,io_uring_enter,io_uring_setup,sync_file_range"}, args...)
	}
	s.cmd = exec.Command(args[0], args[1:]...)
	out, err := os.OpenFile(filepath.Join(s.dir, "mariadbd.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer out.Close()
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.starts++
	s.exited = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); close(done) }(s.cmd, s.exited)
}

// logSince is the error log written by the current start.
func (s *reproServer) logSince() string {
	b, err := os.ReadFile(s.errLog)
	if err != nil || int64(len(b)) < s.logOff {
		return ""
	}
	return string(b[s.logOff:])
}

func (s *reproServer) phase() string {
	l, p := s.logSince(), "before InnoDB"
	for _, m := range reproPhases {
		if strings.Contains(l, m.mark) || (m.alt != "" && strings.Contains(l, m.alt)) {
			p = m.name
		}
	}
	return p
}

// kill is kill -9 of our own mariadbd (strace's child when traced: the
// whole process group would also do, but the pid is ours either way).
func (s *reproServer) kill() {
	if s.cmd == nil {
		return
	}
	if s.cmd.Args[0] == "strace" {
		// The traced mariadbd is strace's child: kill it first.
		for _, pid := range childPids(s.cmd.Process.Pid) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// waitFor polls the error log of the current start for marker (or the
// process's exit).
func (s *reproServer) waitFor(marker string, limit time.Duration) {
	begin := time.Now()
	for time.Since(begin) < limit && !strings.Contains(s.logSince(), marker) {
		select {
		case <-s.exited:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitReady waits for "ready for connections" or the process's exit;
// it reports whether the start failed.
func (s *reproServer) waitReady(limit time.Duration) (ok bool, log string) {
	begin, opened := time.Now(), time.Time{}
	for time.Since(begin) < limit {
		l := s.logSince()
		if opened.IsZero() && strings.Contains(l, reproPhases[0].mark) {
			opened = time.Now()
		}
		if strings.Contains(l, "ready for connections") {
			if opened.IsZero() {
				opened = begin
			}
			s.startsToReady = append(s.startsToReady, time.Since(opened))
			return true, l
		}
		select {
		case <-s.exited:
			s.cmd = nil
			return false, s.logSince()
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.t.Fatalf("mariadbd not ready after %v:\n%s", limit, s.logSince())
	return false, ""
}

func (s *reproServer) db() *sql.DB {
	db, err := sql.Open("mysql", "root@unix("+s.sock+")/?multiStatements=true")
	if err != nil {
		s.t.Fatal(err)
	}
	db.SetMaxOpenConns(8)
	return db
}

// load writes until stop: batched inserts and updates on a few tables,
// a new table (a new tablespace: FILE_CREATE) now and then and an old
// one dropped (FILE_DELETE). Errors end a worker (the kill makes them).
func reproLoad(db *sql.DB, rng *rand.Rand, stop chan struct{}, round int) int64 {
	var wg sync.WaitGroup
	var ops atomic.Int64
	pad := strings.Repeat("x", 400)
	for w := range 4 {
		seed := rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				var q string
				switch x := r.IntN(100); {
				case x < 50:
					var b strings.Builder
					fmt.Fprintf(&b, "INSERT INTO repro.t%d (k, v) VALUES ", r.IntN(3))
					for i := range 200 {
						if i > 0 {
							b.WriteByte(',')
						}
						fmt.Fprintf(&b, "(%d,'%s')", r.IntN(1<<20), pad)
					}
					q = b.String()
				case x < 90:
					q = fmt.Sprintf("UPDATE repro.t%d SET k=k+1, v=REVERSE(v) WHERE id BETWEEN %d AND %d",
						r.IntN(3), r.IntN(20000), r.IntN(20000)+300)
				case x < 96:
					q = fmt.Sprintf("CREATE TABLE IF NOT EXISTS repro.c%d_%d (id INT PRIMARY KEY AUTO_INCREMENT, v TEXT) ENGINE=InnoDB; INSERT INTO repro.c%d_%d (v) VALUES ('%s')",
						round, w, round, w, pad)
				default:
					q = fmt.Sprintf("DROP TABLE IF EXISTS repro.c%d_%d", round-2, r.IntN(4))
				}
				if _, err := db.Exec(q); err != nil {
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	return ops.Load()
}

func TestInnoDBCrashRepro(t *testing.T) {
	if os.Getenv("INNODB_REPRO") == "" {
		t.Skip("long MariaDB crash-recovery experiment: set INNODB_REPRO=1 (scripts/innodb-crash-repro/run.sh)")
	}
	_ = mysql.SetLogger(log.New(io.Discard, "", 0)) // the kills break connections on purpose
	if _, err := exec.LookPath("mariadbd"); err != nil {
		t.Skip("no mariadbd")
	}
	mode := reproEnv("INNODB_REPRO_MODE", "ext4")
	iters := reproInt(t, "INNODB_REPRO_ITER", 20)
	loadSecs := reproInt(t, "INNODB_REPRO_LOAD", 4)
	seed := uint64(reproInt(t, "INNODB_REPRO_SEED", int(time.Now().UnixNano()%1e9)))
	rng := rand.New(rand.NewPCG(seed, 20))
	t.Logf("mode=%s iter=%d load=%ds seed=%d", mode, iters, loadSecs, seed)

	dir := reproEnv("INNODB_REPRO_DIR", "")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &reproServer{t: t, dir: dir, cnf: filepath.Join(dir, "my.cnf"), errLog: filepath.Join(dir, "error.log"),
		sock: filepath.Join(dir, "mysqld.sock"), strace: os.Getenv("INNODB_REPRO_STRACE"), phaseKills: map[string]int{}}
	t.Cleanup(s.kill)

	var fsys *FS
	drop := func(what string) {}
	switch mode {
	case "ext4":
		s.data = filepath.Join(dir, "data")
	case "lazyfs":
		if err := Supported(); err != nil {
			t.Skip(err)
		}
		mnt, back := filepath.Join(dir, "mnt"), filepath.Join(dir, "back")
		for _, d := range []string{mnt, back} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		// phxcluster's options: MariaDB never fsyncs a directory after
		// creating a .ibd, ext4 makes the name durable with the file.
		fsys, err = Mount(mnt, back, Options{FsyncPersistsName: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.kill()
			if err := fsys.Unmount(); err != nil {
				t.Errorf("unmount: %v", err)
			}
		})
		s.data = filepath.Join(mnt, "data")
		drop = func(what string) {
			d, err := fsys.DropUnsynced()
			if err != nil {
				t.Fatalf("drop after %s: %v", what, err)
			}
			t.Logf("  drop after %s: %d files, %d bytes, %d dirs, %d names back", what, d.Files, d.Bytes, d.Dirs, d.Moved)
		}
	default:
		t.Fatalf("INNODB_REPRO_MODE=%q: want ext4 or lazyfs", mode)
	}
	s.writeCnf(reproEnv("INNODB_REPRO_LOGSIZE", "512M"))
	s.install()
	if fsys != nil {
		if err := fsys.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}

	s.start(false)
	if ok, l := s.waitReady(5 * time.Minute); !ok {
		t.Fatalf("first start failed:\n%s", l)
	}
	db := s.db()
	if _, err := db.Exec("CREATE DATABASE repro; CREATE TABLE repro.t0 (id INT PRIMARY KEY AUTO_INCREMENT, k INT, v TEXT, KEY(k)); CREATE TABLE repro.t1 LIKE repro.t0; CREATE TABLE repro.t2 LIKE repro.t0"); err != nil {
		t.Fatal(err)
	}

	var recoveryKills int
	for round := 1; round <= iters; round++ {
		stop := make(chan struct{})
		var ops int64
		done := make(chan struct{})
		go func() { ops = reproLoad(db, rng, stop, round); close(done) }()
		time.Sleep(time.Duration(loadSecs) * time.Second) // the load's length is the knob, not a wait for a condition
		s.kill()                                          // mid-load
		close(stop)
		<-done
		db.Close()
		drop("load")

		// Kills are spread uniformly from InnoDB's buffer pool being
		// ready (the redo log is opened next) to a little past
		// the last full start's "ready for connections".
		span := 3 * time.Second
		if n := len(s.startsToReady); n > 0 {
			span = s.startsToReady[n-1] + s.startsToReady[n-1]/10
		}
		for k := 1 + rng.IntN(3); k > 0; k-- {
			s.start(true)
			s.waitFor(reproPhases[0].mark, 5*time.Minute)
			delay := time.Duration(rng.Int64N(int64(span)))
			select {
			case <-time.After(delay):
			case <-s.exited:
			}
			p := s.phase()
			s.phaseKills[p]++
			recoveryKills++
			t.Logf("round %d: %d ops, killed start after %v in phase %q", round, ops, delay.Round(time.Millisecond), p)
			s.kill()
			if l := s.logSince(); strings.Contains(l, "[ERROR]") {
				t.Logf("  the killed start had logged errors:\n%s", l)
			}
			drop("recovery kill")
		}

		s.start(true)
		ok, l := s.waitReady(10 * time.Minute)
		if !ok || strings.Contains(l, "Data structure corruption") || strings.Contains(l, "[ERROR] InnoDB") {
			s.failed++
			if keep := os.Getenv("INNODB_REPRO_KEEP"); keep != "" {
				if out, err := exec.Command("cp", "-a", s.data, keep).CombinedOutput(); err != nil {
					t.Logf("keep: %v %s", err, out)
				}
			}
			t.Fatalf("REPRODUCED in round %d (after %d kills during recovery; phases %v); the start's log:\n%s",
				round, recoveryKills, s.phaseKills, l)
		}
		t.Logf("round %d: recovered in %v (%s)", round, s.startsToReady[len(s.startsToReady)-1].Round(time.Millisecond), firstLine(l, "End of log"))
		db = s.db()
	}
	db.Close()
	t.Logf("NOT reproduced: %d rounds, %d kills during starts, by phase %v, %d starts", iters, recoveryKills, s.phaseKills, s.starts)
}

func firstLine(l, substr string) string {
	for _, line := range strings.Split(l, "\n") {
		if strings.Contains(line, substr) {
			if i := strings.Index(line, "InnoDB:"); i >= 0 {
				return line[i:]
			}
			return line
		}
	}
	return "no crash recovery"
}

// childPids are pid's children (Linux /proc).
func childPids(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil {
			pids = append(pids, c)
		}
	}
	return pids
}

// TestInnoDBCrashReproRecreate is the short path to issue 20's state the
// long loop above suggested: a table created after the last checkpoint
// whose .ibd is never fsynced (InnoDB fsyncs data files only at a
// checkpoint; nothing fsyncs the directory), so every power loss takes
// the file's name away again:
//
//	CREATE TABLE, rows -> power loss (the .ibd is gone)
//	-> recovery re-creates it from FILE_CREATE, more rows -> power loss (gone again)
//	-> recovery
//
// INNODB_REPRO_DROPCREATE=1 drops and re-creates the table (same file
// name, new tablespace id) before the first crash.
// INNODB_REPRO_MODE=ext4 runs the same with kill -9 only. No checkpoint
// may happen meanwhile: small load, throttled flushing (writeCnf).
func TestInnoDBCrashReproRecreate(t *testing.T) {
	if os.Getenv("INNODB_REPRO") == "" {
		t.Skip("MariaDB crash-recovery experiment: set INNODB_REPRO=1 (scripts/innodb-crash-repro/run.sh)")
	}
	if _, err := exec.LookPath("mariadbd"); err != nil {
		t.Skip("no mariadbd")
	}
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	mode := reproEnv("INNODB_REPRO_MODE", "lazyfs")
	crashes := reproInt(t, "INNODB_REPRO_CRASHES", 2)
	dir := reproEnv("INNODB_REPRO_DIR", "")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &reproServer{t: t, dir: dir, cnf: filepath.Join(dir, "my.cnf"), errLog: filepath.Join(dir, "error.log"),
		sock: filepath.Join(dir, "mysqld.sock"), strace: os.Getenv("INNODB_REPRO_STRACE"), phaseKills: map[string]int{}}
	t.Cleanup(s.kill)
	drop := func() {}
	var fsys *FS
	if mode == "lazyfs" {
		if err := Supported(); err != nil {
			t.Skip(err)
		}
		mnt, back := filepath.Join(dir, "mnt"), filepath.Join(dir, "back")
		for _, d := range []string{mnt, back} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		fsys, err = Mount(mnt, back, Options{FsyncPersistsName: os.Getenv("INNODB_REPRO_STRICT_NAMES") == ""})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.kill()
			if err := fsys.Unmount(); err != nil {
				t.Errorf("unmount: %v", err)
			}
		})
		s.data = filepath.Join(mnt, "data")
		drop = func() {
			d, err := fsys.DropUnsynced()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("  drop: %d files, %d bytes, %d dirs, %d names back", d.Files, d.Bytes, d.Dirs, d.Moved)
		}
	} else {
		s.data = filepath.Join(dir, "data")
	}
	s.writeCnf(reproEnv("INNODB_REPRO_LOGSIZE", "64M"))
	s.install()
	if fsys != nil {
		if err := fsys.Checkpoint(); err != nil { // as phxcluster does once installed
			t.Fatal(err)
		}
	}
	s.start(false)
	if ok, l := s.waitReady(5 * time.Minute); !ok {
		t.Fatalf("first start failed:\n%s", l)
	}
	db := s.db()
	if _, err := db.Exec("CREATE DATABASE repro; CREATE TABLE repro.register (k BIGINT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	ibd := filepath.Join(s.data, "repro", "register.ibd")
	for crash := 1; crash <= crashes+1; crash++ {
		for i := range 50 {
			if _, err := db.Exec("INSERT INTO repro.register VALUES (?, ?) ON DUPLICATE KEY UPDATE v=v+1", crash*1000+i%10, i); err != nil {
				t.Fatal(err)
			}
		}
		if crash == 1 && os.Getenv("INNODB_REPRO_DROPCREATE") != "" {
			// The same file name under a new tablespace id, both never
			// fsynced: recovery defers both.
			if _, err := db.Exec("DROP TABLE repro.register; CREATE TABLE repro.register (k BIGINT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB; INSERT INTO repro.register VALUES (1, 1)"); err != nil {
				t.Fatal(err)
			}
		}
		var ckpt string
		_ = db.QueryRow("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='INNODB_CHECKPOINT_AGE'").Scan(&ckpt)
		db.Close()
		if crash > crashes {
			break
		}
		s.kill()
		drop()
		_, err := os.Stat(ibd)
		t.Logf("crash %d (checkpoint age %s): register.ibd after it: %v", crash, ckpt, err)
		s.start(true)
		ok, l := s.waitReady(5 * time.Minute)
		t.Logf("start after crash %d:\n%s", crash, grepLines(l, "InnoDB: (Starting crash|End of log|ERROR)|\\[ERROR\\]"))
		if !ok || strings.Contains(l, "Data structure corruption") {
			t.Fatalf("REPRODUCED after crash %d: recovery fails", crash)
		}
		db = s.db()
	}
	t.Logf("NOT reproduced: %d crashes recovered", crashes)
}

// grepLines keeps the lines of l matching the regular expression.
func grepLines(l, re string) string {
	rx := regexp.MustCompile(re)
	var out []string
	for _, line := range strings.Split(l, "\n") {
		if rx.MatchString(line) {
			out = append(out, "    "+line)
		}
	}
	return strings.Join(out, "\n")
}
