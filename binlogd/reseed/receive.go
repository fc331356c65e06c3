package reseed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"phxgo/binlogd/cpuprio"
	pb "phxgo/proto"
)

// Target is where and how Receive (or RestoreDir) puts a copy.
type Target struct {
	DataDir string // the node's datadir (mysql_dir/data); it may be missing
	// DiscardOld removes the old datadir after the swap instead of keeping
	// it as <DataDir>.old-<time>.
	DiscardOld bool
	Progress   io.Writer     // progress lines (stderr); nil: none
	Every      time.Duration // between progress lines; 0: a second
	Now        func() time.Time
	// Stall fails a received stream (Receive, WriteBackup) when the
	// source sends no bytes for this long (bound.go); 0: no bound.
	Stall time.Duration
	// MinFree is the free space, in bytes, a received copy must leave on
	// the disk it is written to: the copy fails once less is left
	// (bound.go); 0: no reserve, only a full disk stops it.
	MinFree int64

	// Testing knobs; nil or 0 in production.
	freeSpace  func(dir string) (int64, error) // statfs
	checkEvery int64                           // bytes between free-space checks
}

func (t Target) defaults() (now func() time.Time, out io.Writer, every time.Duration) {
	now, out, every = t.Now, t.Progress, t.Every
	if now == nil {
		now = time.Now
	}
	if out == nil {
		out = io.Discard
	}
	if every <= 0 {
		every = time.Second
	}
	return now, out, every
}

// Result is what a reseed did.
type Result struct {
	Info         *pb.BackupInfo
	Bytes        int64
	Copy         time.Duration // receiving and extracting
	Prepare      time.Duration // mariadb-backup --prepare
	Position     string        // GTID position of the copied data
	PositionFrom string        // the file it was read from
	OldDir       string        // where the old datadir went ("" if none or discarded)
}

// Receive reads a Backup stream (recv returns io.EOF at its end) into a
// new directory beside t.DataDir, prepares it, reads its position and
// swaps it in. On any failure the partial copy is removed and t.DataDir
// is left as it was; that includes a stream that stalls (ErrStalled) or
// runs into the disk's reserve (ErrNoRoom).
func Receive(ctx context.Context, recv func() (*pb.BackupChunk, error), t Target) (res Result, err error) {
	now, _, _ := t.defaults()
	stamp := now().UTC().Format("20060102T150405")
	newDir := t.DataDir + ".reseed-" + stamp
	if err := os.MkdirAll(filepath.Dir(t.DataDir), 0o750); err != nil { // a new node's mysql_dir
		return res, fmt.Errorf("reseed: %w", err)
	}
	if err := receiveInto(ctx, recv, newDir, "reseed", t, &res); err != nil {
		return res, err
	}
	if err := swapIn(newDir, t, stamp, &res); err != nil {
		_ = os.RemoveAll(newDir)
		return res, err
	}
	return res, nil
}

// receiveInto extracts a Backup stream into dir (which must not exist),
// prepares it and reads its position into res. On failure dir is removed.
// The stream is bounded by t.Stall and t.MinFree (bound.go).
func receiveInto(ctx context.Context, recv func() (*pb.BackupChunk, error), dir, label string, t Target, res *Result) (err error) {
	_, out, every := t.defaults()
	stream := newChunkStream(ctx, recv, t.Stall)
	defer stream.close()
	first, err := stream.next()
	if err != nil {
		return fmt.Errorf("%s: the source refused or failed: %w", label, err)
	}
	if first.Info == nil {
		return fmt.Errorf("%s: the stream does not start with the backup's info (a binlogd without Backup?)", label)
	}
	res.Info = first.Info
	// The source's words are quoted: they come from a peer and reach the
	// operator's terminal.
	fmt.Fprintf(out, "%s: copying from node %d (MariaDB %q, at %q), about %s\n",
		label, res.Info.SourceNode, res.Info.MariadbVersion, orNone(res.Info.SourceGtidPos), size(int64(res.Info.EstimatedBytes)))
	if err := os.Mkdir(dir, 0o750); err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	room := newRoomCheck(dir, t)
	if err := room.check(0); err != nil {
		return fmt.Errorf("%s: %w (nothing copied)", label, err)
	}
	// The estimate is the source's word, and a copy may outgrow it: it
	// only warns here, the reserve is enforced while the copy runs.
	if free, ferr := room.free(dir); ferr == nil && t.MinFree > 0 && int64(res.Info.EstimatedBytes) > free-t.MinFree {
		fmt.Fprintf(out, "%s: warning: the source estimates ~%s, but only %s is free on the disk of %s beyond the reserve of %s: the copy stops if it runs into the reserve\n",
			label, size(int64(res.Info.EstimatedBytes)), size(max(0, free-t.MinFree)), dir, size(t.MinFree))
	}

	xctx, cancel := context.WithCancel(ctx)
	defer cancel()
	x := exec.CommandContext(xctx, "mbstream", "-x", "-C", dir)
	xerr := &tailBuffer{max: stderrTail}
	x.Stderr, x.Stdout = xerr, xerr
	in, err := x.StdinPipe()
	if err != nil {
		return err
	}
	if err := cpuprio.StartChild(x); err != nil {
		return fmt.Errorf("%s: start mbstream: %w (install the mariadb-backup package: scripts/install-deps.sh)", label, err)
	}
	p := startProgress(out, label, int64(res.Info.EstimatedBytes), every, t.Stall)
	var copyErr error
	for {
		c, rerr := stream.next()
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			copyErr = fmt.Errorf("%s: the stream from node %d broke after %d bytes: %w", label, res.Info.SourceNode, p.bytes.Load(), rerr)
			break
		}
		if _, werr := in.Write(c.Data); werr != nil {
			copyErr = fmt.Errorf("%s: mbstream stopped taking the stream: %w", label, werr)
			break
		}
		p.add(len(c.Data))
		if rerr := room.check(p.bytes.Load()); rerr != nil {
			copyErr = fmt.Errorf("%s: stopped the copy from node %d: %w", label, res.Info.SourceNode, rerr)
			break
		}
	}
	if copyErr != nil {
		cancel()
	}
	in.Close()
	werr := x.Wait()
	p.finish()
	res.Bytes, res.Copy = p.bytes.Load(), time.Since(p.start)
	switch {
	case copyErr != nil:
		return copyErr
	case werr != nil:
		return fmt.Errorf("%s: mbstream -x: %v: %s", label, werr, xerr.String())
	}

	fmt.Fprintf(out, "%s: preparing the copy (mariadb-backup --prepare)\n", label)
	start := time.Now()
	prep := exec.CommandContext(ctx, "mariadb-backup", "--prepare", "--target-dir="+dir)
	perr := &tailBuffer{max: stderrTail}
	prep.Stderr, prep.Stdout = perr, perr
	if err := cpuprio.RunChild(prep); err != nil {
		return fmt.Errorf("%s: mariadb-backup --prepare: %v: %s", label, err, perr.String())
	}
	res.Prepare = time.Since(start)
	if err := syncTree(dir); err != nil {
		return err
	}
	res.Position, res.PositionFrom, err = Position(dir)
	return err
}

// swapIn moves the prepared copy newDir to t.DataDir, keeping the old
// datadir as <DataDir>.old-<stamp> (DiscardOldDir removes it later).
func swapIn(newDir string, t Target, stamp string, res *Result) error {
	if _, serr := os.Stat(t.DataDir); serr == nil {
		old := t.DataDir + ".old-" + stamp
		if err := os.Rename(t.DataDir, old); err != nil {
			return fmt.Errorf("reseed: move the old datadir aside: %w", err)
		}
		res.OldDir = old
	} else if !os.IsNotExist(serr) {
		return serr
	}
	if err := os.Rename(newDir, t.DataDir); err != nil {
		if res.OldDir != "" { // put the old one back
			_ = os.Rename(res.OldDir, t.DataDir)
			res.OldDir = ""
		}
		return fmt.Errorf("reseed: move the copy into place: %w", err)
	}
	// The renames are durable once the directory holding both names is.
	if err := syncPath(filepath.Dir(t.DataDir)); err != nil {
		return fmt.Errorf("reseed: flush the swap to disk: %w", err)
	}
	return nil
}

// DiscardOldDir removes the old datadir swapIn kept (res.OldDir), when t
// asks for it. The caller runs it only once the copy has started and
// taken its position: until then a failure leaves the old datadir there
// to go back to (session 37's red-team pass: a position MariaDB refused
// failed the reseed after -discard-old had removed it).
func (t Target) DiscardOldDir(res *Result) error {
	if !t.DiscardOld || res.OldDir == "" {
		return nil
	}
	if err := os.RemoveAll(res.OldDir); err != nil {
		return fmt.Errorf("reseed: remove the old datadir %s: %w", res.OldDir, err)
	}
	res.OldDir = ""
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(no GTID)"
	}
	return s
}
