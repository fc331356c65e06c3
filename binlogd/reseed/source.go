package reseed

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"phxgo/binlogd/cpuprio"
	pb "phxgo/proto"
)

// ChunkBytes is the size of one streamed chunk: large enough that the
// per-message cost is noise, well under gRPC's 4 MiB message limit.
const ChunkBytes = 1 << 20

// flushAfter is how long Serve holds a partial chunk: what the tool
// writes reaches the receiver within it even when it trickles (in a
// quiet phase mariadb-backup writes little, and the receiver's stall
// bound counts bytes, not time the source spent filling a chunk).
const flushAfter = time.Second

// stderrTail is how much of a tool's stderr an error carries.
const stderrTail = 4096

// Source describes the serving node's MariaDB.
type Source struct {
	NodeID     uint32
	ConfigFile string  // the instance's my.cnf: mariadb-backup reads datadir and InnoDB settings from it
	Socket     string  // the server's unix socket
	User       string  // the unix-socket admin account (mysqld.AdminUser)
	DataDir    string  // for the size estimate
	TmpDir     string  // mariadb-backup's scratch space (a directory per backup is made in it)
	DB         *sql.DB // the admin connection, for @@version and @@gtid_current_pos
	Logger     *slog.Logger
}

// Serve runs one backup and sends it: first a chunk with only Info, then
// the xbstream bytes in order. It returns the tool's failure with the
// tail of its stderr; the RPC's status code is the caller's choice.
func (s Source) Serve(ctx context.Context, send func(*pb.BackupChunk) error) error {
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	info := &pb.BackupInfo{SourceNode: s.NodeID, EstimatedBytes: uint64(EstimateBytes(s.DataDir))}
	if s.DB != nil {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = s.DB.QueryRowContext(qctx, "SELECT @@version, @@gtid_current_pos").Scan(&info.MariadbVersion, &info.SourceGtidPos)
		cancel()
	}
	if err := os.MkdirAll(s.TmpDir, 0o750); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp(s.TmpDir, "backup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)

	cmd := exec.CommandContext(ctx, "mariadb-backup", BackupArgs(s.ConfigFile, s.Socket, s.User, scratch)...)
	stderr := &tailBuffer{max: stderrTail}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cpuprio.StartChild(cmd); err != nil { // at mysql_nice: the backup must not outrank the MariaDB serving clients
		return fmt.Errorf("reseed: start mariadb-backup: %w (install the mariadb-backup package: scripts/install-deps.sh)", err)
	}
	log.Info("backup started for a reseed", "estimated_bytes", info.EstimatedBytes, "version", info.MariadbVersion, "gtid_current_pos", info.SourceGtidPos)
	start := time.Now()
	sendErr := send(&pb.BackupChunk{Info: info})
	var sent int64
	buf := make([]byte, ChunkBytes)
	for sendErr == nil {
		n, rerr := readChunk(out, buf, flushAfter)
		if n > 0 {
			// A fresh slice per message: gRPC may hold the bytes after Send returns.
			sendErr = send(&pb.BackupChunk{Data: append([]byte(nil), buf[:n]...)})
			sent += int64(n)
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
				sendErr = rerr
			}
			break
		}
	}
	if sendErr != nil {
		// The client went away (or ctx ended): stop the tool, do not let it
		// block on a full pipe.
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	}
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	switch {
	case sendErr != nil:
		log.Warn("backup for a reseed stopped: the stream failed", "bytes", sent, "err", sendErr)
		return fmt.Errorf("reseed: sending the backup after %d bytes: %w", sent, sendErr)
	case werr != nil:
		log.Error("mariadb-backup failed", "err", werr, "stderr", stderr.String())
		return fmt.Errorf("mariadb-backup on node %d failed: %v; its stderr ends with:\n%s", s.NodeID, werr, stderr.String())
	}
	d := time.Since(start)
	log.Info("backup for a reseed sent", "bytes", sent, "seconds", d.Seconds(), "mib_per_s", mibps(sent, d))
	return nil
}

// readChunk fills buf from r as io.ReadFull does, but returns what it has
// (with a nil error) once wait has passed since its first byte. r must
// take read deadlines (the tool's stdout, a pipe); any other reader is
// read with io.ReadFull.
func readChunk(r io.Reader, buf []byte, wait time.Duration) (int, error) {
	d, ok := r.(interface{ SetReadDeadline(time.Time) error })
	if !ok || d.SetReadDeadline(time.Time{}) != nil {
		return io.ReadFull(r, buf)
	}
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		if m > 0 && n == 0 {
			_ = d.SetReadDeadline(time.Now().Add(wait))
		}
		n += m
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return n, nil
		case errors.Is(err, io.EOF) && n > 0:
			return n, io.ErrUnexpectedEOF
		case err != nil:
			return n, err
		}
	}
	return n, nil
}

// BackupArgs is the mariadb-backup command line of a streamed backup.
// --defaults-file must come first; the server's my.cnf gives datadir and
// the InnoDB layout. --slave-info writes xtrabackup_slave_info; the
// binlog position (xtrabackup_binlog_info) is written by default.
func BackupArgs(myCnf, socket, user, scratch string) []string {
	return []string{
		"--defaults-file=" + myCnf,
		"--backup", "--stream=xbstream", "--slave-info",
		"--socket=" + socket, "--user=" + user,
		"--target-dir=" + scratch, "--tmpdir=" + scratch,
	}
}

// EstimateBytes is what a backup of datadir will stream, roughly: the
// size of its files without binlogs, relay logs and the redo log (which
// mariadb-backup does not copy whole). 0 when the walk fails.
func EstimateBytes(datadir string) int64 {
	var total int64
	_ = filepath.WalkDir(datadir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := d.Name()
		for _, skip := range []string{"binlog.", "relay.", "relay-log.", "ib_logfile", "mysqld.pid", "aria_log"} {
			if strings.HasPrefix(name, skip) {
				return nil
			}
		}
		if info, err := d.Info(); err == nil {
			total += info.Size()
		}
		return nil
	})
	return total
}

// tailBuffer keeps the last max bytes written to it (a tool's stderr,
// which for mariadb-backup is a line per copied file).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return strings.TrimSpace(string(b))
}

func mibps(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / (1 << 20) / d.Seconds()
}
