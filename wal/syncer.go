package wal

import (
	"errors"
	"log/slog"
	"os"
	"sync/atomic"
)

// syncer is how a Log flushes its segments on the commit path: through
// an io_uring where the kernel allows one, else by the fdatasync system
// call.
//
// Why not simply the system call: a goroutine in a system call holds a
// thread, and entering one wakes the runtime's sysmon from its deep
// sleep (runtime.entersyscallWakeSysmon), after which it polls every
// 20 µs for a millisecond or more and hands the P of any call it finds
// blocked to another thread. A binlogd under load syncs a few hundred
// times a second with idle moments between: the polling alone was a
// fifth of its CPU (README, "Where binlogd's CPU goes"). Through the
// ring the kernel's io-wq worker does the flush, the submitter enters
// the ring with a raw system call that returns at once, and it waits
// for the completion's eventfd in the netpoller, like a socket read.
// Together with raw socket I/O (package binlogd/rawnet) and raw segment
// writes (pwrite.go) binlogd's CPU per transaction fell to about 0.8x.
//
// A sync through the ring is the same fdatasync (IORING_FSYNC_DATASYNC)
// on the same file: durability and errors are unchanged. A failure of
// the ring itself makes the syncer fall back to the system call for
// good. The sync under way is repeated by the system call only if the
// kernel never took it (or cancelled it before it ran): one it took may
// have consumed the file's write error, which a repeat would then not
// see, so that sync fails instead (errSyncLost) and with it the Log.
type syncer struct {
	ring  atomic.Pointer[uring] // nil: the system call
	owned *uring                // closed with the Log, broken or not
	log   *slog.Logger
}

// newSyncer returns a syncer through io_uring unless plain is set or the
// kernel refuses one. A Log that never syncs (noSync) needs no ring and
// says nothing.
func newSyncer(plain, noSync bool, log *slog.Logger) *syncer {
	s := &syncer{log: log}
	if noSync {
		return s
	}
	if plain {
		log.Info("wal: segment syncs by the fdatasync system call (PlainSync)")
		return s
	}
	u, err := newURing()
	if err != nil {
		log.Info("wal: io_uring unavailable; segment syncs by the fdatasync system call", "err", err)
		return s
	}
	s.owned = u
	s.ring.Store(u)
	return s
}

// usesRing reports whether syncs go through io_uring.
func (s *syncer) usesRing() bool { return s.ring.Load() != nil }

func (s *syncer) fdatasync(f *os.File) error {
	if u := s.ring.Load(); u != nil {
		err := u.fdatasync(f)
		if !errors.Is(err, errRingBroken) {
			return err
		}
		if s.ring.CompareAndSwap(u, nil) {
			s.log.Warn("wal: io_uring failed; segment syncs by the fdatasync system call from now on", "err", err)
		}
	}
	return fdatasync(f)
}

// close releases the ring; no sync may be in flight.
func (s *syncer) close() {
	if s.owned != nil {
		s.owned.close()
	}
}
