package wire

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a non-blocking socket with RawSyscall instead of
// the net package's Syscall. Both wait through the same netpoller
// (syscall.RawConn), so deadlines, Close and readiness behave as for a
// plain net.Conn; what goes away is the runtime's syscall bookkeeping.
//
// Why: a proxy runs a handful of Ps (cmd/sqlproxy: Go's default, one
// per CPU) and makes two reads and two writes per point select. A Syscall marks the P as in a syscall; sysmon, polling every
// 20 µs while it finds such Ps, takes the P from any write that spans
// one of its ticks (a write that wakes the reader can, on a loaded host)
// and starts another thread to run it: a thread hand-off per query and
// a sysmon that never backs off. Profiled under sysbench point selects
// (issue 19), sysmon alone was a sixth of the proxy's CPU. A read or
// write on a non-blocking socket never blocks (EAGAIN instead), so
// holding the P through it costs nothing a hand-off would save.
type rawIO struct {
	c  net.Conn
	rc syscall.RawConn

	// The callbacks and their arguments live here, so a call allocates
	// no closure. Read and write have separate fields: bufio reads and
	// writes of one Conn never overlap, but nothing here relies on it.
	rbuf    []byte
	rn      int
	rerr    syscall.Errno
	wbuf    []byte
	wn      int
	werr    syscall.Errno
	readFn  func(uintptr) bool
	writeFn func(uintptr) bool
	network string

	// awaitReply: the next Write is a request whose answer the caller
	// reads next (Conn.FlushAwaitReply); awaitFn is its callback.
	awaitReply bool
	awaitFn    func(uintptr) bool
	wsent      bool // awaitFn: the request is written, now waiting

	emptyReads int // reads that found nothing (EAGAIN): tests count them
}

// newRawIO returns c's raw reader-writer, or c itself when c is not a TCP
// or unix socket (TLS, test pipes): those keep the net package's path.
func newRawIO(c net.Conn) io.ReadWriter {
	var sc syscall.Conn
	network := ""
	switch t := c.(type) {
	case *net.TCPConn:
		sc, network = t, "tcp"
	case *net.UnixConn:
		sc, network = t, "unix"
	default:
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	r := &rawIO{c: c, rc: rc, network: network}
	r.readFn, r.writeFn, r.awaitFn = r.doRead, r.doWrite, r.doWriteAwait
	return r
}

func (r *rawIO) doRead(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(r.rbuf))), uintptr(len(r.rbuf)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			r.emptyReads++
			return false // RawConn waits for readiness (or the deadline) and calls again
		case 0:
			r.rn = int(n)
		default:
			r.rerr = e
		}
		return true
	}
}

func (r *rawIO) doWrite(fd uintptr) bool {
	for len(r.wbuf) > 0 {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(r.wbuf))), uintptr(len(r.wbuf)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case 0:
			r.wn += int(n)
			r.wbuf = r.wbuf[n:]
		default:
			r.werr = e
			return true
		}
	}
	return true
}

// doWriteAwait is Write's callback in awaitReply mode, run by RawConn's
// Read: the poller's read readiness was reset before the first call, so
// once the request is written any byte of the answer wakes the wait
// below, and the read that follows finds it instead of failing with
// EAGAIN first (a peer answers no sooner than tens of µs after it is
// woken: a read right after the write nearly always finds nothing, one
// wasted system call per request). Called again after that wake, it
// returns at once; the caller's next Read does the read. A write that
// would block, or fails, ends the wait: Write finishes the normal way.
func (r *rawIO) doWriteAwait(fd uintptr) bool {
	if r.wsent {
		return true
	}
	for len(r.wbuf) > 0 {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(r.wbuf))), uintptr(len(r.wbuf)))
		switch e {
		case syscall.EINTR:
			continue
		case 0:
			r.wn += int(n)
			r.wbuf = r.wbuf[n:]
			continue
		case syscall.EAGAIN:
		default:
			r.werr = e
		}
		return true // socket buffer full, or an error: no wait here
	}
	r.wsent = true
	return false // wait until readable (or closed, or the read deadline)
}

// writeAwait writes p and waits until the connection is readable (see
// doWriteAwait). A request that did not fit the socket buffer is
// finished with a plain write and not waited for. It must only be used
// when the peer sends nothing unasked: an answer that arrived before
// the wait began would not wake it. A MariaDB (or proxy) connection
// between commands is such a peer; if it closes the connection
// meanwhile, the write fails or the reset wakes the wait.
func (r *rawIO) writeAwait(p []byte) (int, error) {
	r.wbuf, r.wsent = p, false
	err := r.rc.Read(r.awaitFn)
	n, e := r.wn, r.werr
	rest := r.wbuf
	r.wbuf, r.wn, r.werr, r.wsent = nil, 0, 0, false
	switch {
	case e != 0:
		return n, r.opError("write", e)
	case len(rest) > 0 && err == nil:
		m, err := r.Write(rest)
		return n + m, err
	case err != nil && len(rest) > 0:
		return n, err // closed before any wait: as Write would
	}
	// Written. A failed wait (deadline, closed) shows on the next read.
	return n, nil
}

// Read is net.Conn's Read: one read(2), io.EOF at the end of the stream.
func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.rbuf = p
	err := r.rc.Read(r.readFn) // closed, deadline: the net package's errors
	n, e := r.rn, r.rerr
	r.rbuf, r.rn, r.rerr = nil, 0, 0
	switch {
	case err != nil:
		return 0, err
	case e != 0:
		return 0, r.opError("read", e)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write is net.Conn's Write: all of p, or an error.
func (r *rawIO) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.awaitReply {
		r.awaitReply = false
		return r.writeAwait(p)
	}
	r.wbuf = p
	err := r.rc.Write(r.writeFn)
	n, e := r.wn, r.werr
	r.wbuf, r.wn, r.werr = nil, 0, 0
	switch {
	case err != nil:
		return n, err
	case e != 0:
		return n, r.opError("write", e)
	}
	return n, nil
}

func (r *rawIO) opError(op string, e syscall.Errno) error {
	return &net.OpError{Op: op, Net: r.network, Source: r.c.LocalAddr(), Addr: r.c.RemoteAddr(), Err: os.NewSyscallError(op, e)}
}
