package reseed

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	pb "phxgo/proto"
)

// The bounds on a received stream. The stream comes from a peer: a
// broken one can stop sending and hold the RPC open (the operator's
// command would hang), a lying one can send without end (the copy would
// fill the disk that also holds the old datadir and the node's Paxos
// log). Neither the source's size estimate nor anything else it says can
// bound the stream: a liar sends what it likes, and an honest backup
// legitimately grows past its estimate (the redo log written while it
// copies, rows inserted meanwhile). So the receiver bounds it by what it
// can check itself:
//
//   - time: no bytes for Target.Stall fails the copy (ErrStalled); chunks
//     without data do not count, so a peer cannot hold the stream open
//     with empty messages;
//   - space: the free space left on the disk the copy is written to is
//     checked every checkEvery bytes, and the copy fails (ErrNoRoom) when
//     less than Target.MinFree is left, whatever the estimate said.
//
// Either failure is a failure like a broken stream: mbstream is stopped,
// the partial copy removed and the old datadir left as it was.
var (
	// ErrStalled: the source sent no bytes for Target.Stall.
	ErrStalled = errors.New("the source sent nothing")
	// ErrNoRoom: the copy would leave less than Target.MinFree free.
	ErrNoRoom = errors.New("not enough free disk space")
)

// checkEvery is how many stream bytes pass between two free-space checks:
// the reserve (Target.MinFree) must be larger than it, and one statfs per
// 8 MiB is noise.
const checkEvery = 8 << 20

// received is one result of the stream's recv.
type received struct {
	c   *pb.BackupChunk
	err error
}

// chunkStream reads a Backup stream with a stall bound: recv runs in a
// goroutine so that next can give up on it. After an error from next,
// that goroutine may stay blocked in recv until the caller ends the
// stream (cancels its context: every caller's defer does).
type chunkStream struct {
	ctx   context.Context
	ch    chan received
	stop  chan struct{}
	stall time.Duration
	timer *time.Timer // nil: no stall bound
	data  bool        // the last chunk carried bytes: the next wait starts the clock again
}

func newChunkStream(ctx context.Context, recv func() (*pb.BackupChunk, error), stall time.Duration) *chunkStream {
	s := &chunkStream{ctx: ctx, ch: make(chan received), stop: make(chan struct{}), stall: stall}
	if stall > 0 {
		s.timer = time.NewTimer(stall)
	}
	go func() {
		for {
			c, err := recv()
			if err == nil && c == nil {
				err = errors.New("an empty message") // a gRPC stream never returns (nil, nil); a fake might
			}
			select {
			case s.ch <- received{c, err}:
			case <-s.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// next returns the stream's next chunk; its error is recv's (io.EOF at
// the end), ErrStalled once it waited for the stall bound since the last
// chunk with data (or since the start), or ctx's.
func (s *chunkStream) next() (*pb.BackupChunk, error) {
	var stalled <-chan time.Time
	if s.timer != nil {
		if s.data { // from here: the time writing the last bytes is not the source's
			s.timer.Reset(s.stall)
		}
		stalled = s.timer.C
	}
	select {
	case r := <-s.ch:
		s.data = r.err == nil && len(r.c.Data) > 0
		return r.c, r.err
	case <-stalled:
		return nil, fmt.Errorf("%w for %s (-stall-timeout): it stalled, or its mariadb-backup waits that long for a lock (e.g. behind a long DDL)",
			ErrStalled, s.stall)
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

// close lets the goroutine go once its recv returns.
func (s *chunkStream) close() {
	close(s.stop)
	if s.timer != nil {
		s.timer.Stop()
	}
}

// roomCheck keeps a copy from eating the reserve of the disk it goes to.
type roomCheck struct {
	dir     string
	minFree int64
	free    func(dir string) (int64, error)
	every   int64
	next    int64 // the byte count of the next check
}

func newRoomCheck(dir string, t Target) *roomCheck {
	r := &roomCheck{dir: dir, minFree: t.MinFree, free: t.freeSpace, every: t.checkEvery}
	if r.free == nil {
		r.free = freeSpace
	}
	if r.every <= 0 {
		r.every = checkEvery
	}
	return r
}

// check fails with ErrNoRoom when less than minFree is left on dir's
// disk; it asks the disk only every r.every bytes (0 asks now). A disk
// that cannot be asked is no reason to stop: mbstream fails on a full
// disk by itself.
func (r *roomCheck) check(bytes int64) error {
	if r.minFree <= 0 || bytes < r.next {
		return nil
	}
	r.next = bytes + r.every
	free, err := r.free(r.dir)
	if err != nil || free >= r.minFree {
		return nil
	}
	return fmt.Errorf("%w: %s left on the disk of %s after %s of the stream, under the reserve of %s (-min-free-mb): free space there, or the source sends more than a backup of it can be",
		ErrNoRoom, size(free), filepath.Dir(r.dir), size(bytes), size(r.minFree))
}

// freeSpace is what an unprivileged process may still write to the
// filesystem holding dir (without the blocks reserved for root).
func freeSpace(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
