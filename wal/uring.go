package wal

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// uring runs fdatasync through an io_uring (see syncer.go for why). It
// is the smallest ring that does: no SQPOLL, no registered files, one
// opcode. Submitters fill an entry and enter the ring under mu; one
// reaper goroutine waits on an eventfd the kernel signals for every
// completion, through the netpoller, and hands each result to its
// submitter. No system call here goes through entersyscall.
type uring struct {
	fd   int
	efd  *os.File // eventfd registered with the ring: readable on completion
	erc  syscall.RawConn
	sq   []byte // the submission ring's mapping
	cq   []byte // the completion ring's mapping
	sqes []byte // the submission entries' mapping

	sqHead, sqTail, sqMask, sqArray *uint32
	cqHead, cqTail, cqMask          *uint32
	cqes                            uintptr // offset of the first CQE in cq
	entries                         uint32

	slots chan struct{} // bounds requests in flight by the ring's size

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan int32
	broken  error // set once the reaper stopped; every later call fails
	reaped  chan struct{}
}

// ioURingParams is struct io_uring_params (120 bytes).
type ioURingParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

// From include/uapi/linux/io_uring.h.
const (
	ioringOffSQRing     = 0
	ioringOffCQRing     = 0x8000000
	ioringOffSQEs       = 0x10000000
	ioringOpFsync       = 3
	ioringFsyncDatasync = 1
	ioringRegisterEvfd  = 4
	ioringSQEBytes      = 64
	ioringCQEBytes      = 16
	ioringEntries       = 16 // more than MaxSyncsInFlight plus a lazy sync need
	sysIOURingSetup     = 425
	sysIOURingEnter     = 426
	sysIOURingRegister  = 427
)

// errRingBroken wraps a failure of the ring itself, with the sync not
// taken by the kernel (or cancelled before it ran): the caller falls
// back to the system call.
var errRingBroken = errors.New("wal: io_uring failed")

// errSyncLost: the ring stopped with the sync taken by the kernel; its
// result is unknown. Not errRingBroken: a repeated fdatasync could
// report success where this one consumed the file's write error (Linux
// reports a writeback error once per open file), so the Log fails.
var errSyncLost = errors.New("wal: io_uring stopped with a sync in flight; its result is unknown")

// newURing sets up a ring, or fails (an old kernel, io_uring turned off
// by sysctl kernel.io_uring_disabled or by a seccomp filter): the caller
// then uses the system call.
func newURing() (*uring, error) {
	var p ioURingParams
	fd, _, e := syscall.Syscall(sysIOURingSetup, ioringEntries, uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", e)
	}
	u := &uring{fd: int(fd), entries: p.sqEntries, pending: map[uint64]chan int32{}, reaped: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			u.unmap()
		}
	}()
	mmap := func(off int64, n uint32) ([]byte, error) {
		return syscall.Mmap(u.fd, off, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	}
	var err error
	if u.sq, err = mmap(ioringOffSQRing, p.sqOff.array+p.sqEntries*4); err != nil {
		return nil, fmt.Errorf("io_uring mmap: %w", err)
	}
	if u.cq, err = mmap(ioringOffCQRing, p.cqOff.cqes+p.cqEntries*ioringCQEBytes); err != nil {
		return nil, fmt.Errorf("io_uring mmap: %w", err)
	}
	if u.sqes, err = mmap(ioringOffSQEs, p.sqEntries*ioringSQEBytes); err != nil {
		return nil, fmt.Errorf("io_uring mmap: %w", err)
	}
	at := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	u.sqHead, u.sqTail, u.sqMask, u.sqArray = at(u.sq, p.sqOff.head), at(u.sq, p.sqOff.tail), at(u.sq, p.sqOff.ringMask), at(u.sq, p.sqOff.array)
	u.cqHead, u.cqTail, u.cqMask = at(u.cq, p.cqOff.head), at(u.cq, p.cqOff.tail), at(u.cq, p.cqOff.ringMask)
	u.cqes = uintptr(p.cqOff.cqes)
	// Fewer requests in flight than completion entries: the CQ never
	// overflows.
	u.slots = make(chan struct{}, min(p.sqEntries, p.cqEntries))

	efd, _, e := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if e != 0 {
		return nil, fmt.Errorf("eventfd: %w", e)
	}
	u.efd = os.NewFile(efd, "wal-io_uring-eventfd") // non-blocking: waits in the netpoller
	if u.erc, err = u.efd.SyscallConn(); err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	evfd := int32(efd)
	if _, _, e := syscall.Syscall6(sysIOURingRegister, uintptr(u.fd), ioringRegisterEvfd, uintptr(unsafe.Pointer(&evfd)), 1, 0, 0); e != 0 {
		return nil, fmt.Errorf("io_uring register eventfd: %w", e)
	}
	ok = true
	go u.reap()
	return u, nil
}

// fdatasync flushes f's data through the ring and waits for it without
// holding a thread. An error wrapping errRingBroken means the ring
// failed, not the sync: whether f is synced is unknown.
func (u *uring) fdatasync(f *os.File) error {
	fd := f.Fd()
	u.slots <- struct{}{}
	defer func() { <-u.slots }()
	done := make(chan int32, 1)

	u.mu.Lock()
	if u.broken != nil {
		u.mu.Unlock()
		return u.broken
	}
	u.next++
	id := u.next
	u.pending[id] = done
	tail := atomic.LoadUint32(u.sqTail)
	slot := tail & *u.sqMask
	sqe := u.sqes[slot*ioringSQEBytes : (slot+1)*ioringSQEBytes]
	clear(sqe)
	sqe[0] = ioringOpFsync
	*(*int32)(unsafe.Pointer(&sqe[4])) = int32(fd)
	*(*uint32)(unsafe.Pointer(&sqe[28])) = ioringFsyncDatasync
	*(*uint64)(unsafe.Pointer(&sqe[32])) = id
	unsafe.Slice(u.sqArray, u.entries)[slot] = slot
	atomic.StoreUint32(u.sqTail, tail+1)
	err := u.enter(tail + 1)
	if err != nil {
		// No submission after this one: a later enter would also submit
		// this entry, and nobody would read its result.
		u.broken = err
		if atomic.LoadUint32(u.sqHead) == tail {
			atomic.StoreUint32(u.sqTail, tail) // not taken: withdraw it (no SQPOLL, mu held)
			delete(u.pending, id)
		} else {
			err = nil // taken despite the error: its result comes
		}
	}
	u.mu.Unlock()
	if err != nil {
		return err
	}
	res, ok := <-done
	runtime.KeepAlive(f) // its finalizer would close fd under the sync
	switch {
	case !ok:
		return errSyncLost // the reaper stopped
	case res == -int32(syscall.ECANCELED):
		// io-wq cancelled it before it ran (e.g. no worker thread could
		// be created): nothing was flushed or consumed, so the system
		// call may do it.
		return fmt.Errorf("%w: sync cancelled", errRingBroken)
	case res < 0:
		return syscall.Errno(-res)
	}
	return nil
}

// enter submits the entries up to tail. io_uring_enter may be
// interrupted after the kernel took some; the ring's head says which.
func (u *uring) enter(tail uint32) error {
	for {
		head := atomic.LoadUint32(u.sqHead)
		if head == tail {
			return nil
		}
		_, _, e := syscall.RawSyscall6(sysIOURingEnter, uintptr(u.fd), uintptr(tail-head), 0, 0, 0, 0)
		switch e {
		case 0, syscall.EINTR:
		case syscall.EAGAIN, syscall.EBUSY:
			// Out of kernel memory for the request, or completions to
			// reap first: the slots make the latter impossible. Let the
			// caller use the system call.
			return fmt.Errorf("%w: io_uring_enter: %w", errRingBroken, e)
		default:
			return fmt.Errorf("%w: io_uring_enter: %w", errRingBroken, e)
		}
	}
}

// reap runs until the eventfd is closed: it waits for completions and
// hands each result to its submitter.
func (u *uring) reap() {
	defer close(u.reaped)
	var buf [8]byte
	var rerr syscall.Errno
	read := func(fd uintptr) bool {
		_, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), 8)
		switch e {
		case syscall.EAGAIN:
			return false // wait in the netpoller
		case syscall.EINTR:
			return u.reapable()
		}
		rerr = e
		return true
	}
	for {
		rerr = 0
		err := u.erc.Read(read)
		if err == nil && rerr != 0 {
			err = rerr
		}
		u.mu.Lock()
		u.dispatch()
		if err != nil {
			if u.broken == nil {
				u.broken = fmt.Errorf("%w: eventfd: %w", errRingBroken, err)
			}
			for id, ch := range u.pending {
				close(ch)
				delete(u.pending, id)
			}
			u.mu.Unlock()
			return
		}
		u.mu.Unlock()
	}
}

// reapable reports whether completions wait in the ring.
func (u *uring) reapable() bool {
	return atomic.LoadUint32(u.cqHead) != atomic.LoadUint32(u.cqTail)
}

// dispatch takes the completions in the ring and answers their
// submitters (with mu held).
func (u *uring) dispatch() {
	head := atomic.LoadUint32(u.cqHead)
	tail := atomic.LoadUint32(u.cqTail)
	for ; head != tail; head++ {
		off := u.cqes + uintptr(head&*u.cqMask)*ioringCQEBytes
		id := *(*uint64)(unsafe.Pointer(&u.cq[off]))
		res := *(*int32)(unsafe.Pointer(&u.cq[off+8]))
		if ch, ok := u.pending[id]; ok {
			ch <- res
			delete(u.pending, id)
		}
	}
	atomic.StoreUint32(u.cqHead, head)
}

// close stops the reaper and releases the ring. No fdatasync may be in
// flight or start. A second call does nothing.
func (u *uring) close() {
	u.mu.Lock()
	if u.broken == nil {
		u.broken = fmt.Errorf("%w: closed", errRingBroken)
	}
	u.mu.Unlock()
	u.efd.Close() // ends the reaper's wait with an error
	<-u.reaped
	u.unmap()
}

// unmap releases the ring; a second call does nothing.
func (u *uring) unmap() {
	if u.efd != nil {
		u.efd.Close()
	}
	for _, m := range [][]byte{u.sq, u.cq, u.sqes} {
		if m != nil {
			_ = syscall.Munmap(m)
		}
	}
	u.sq, u.cq, u.sqes = nil, nil, nil
	if u.fd >= 0 {
		_ = syscall.Close(u.fd)
		u.fd = -1
	}
}
