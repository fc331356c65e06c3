package rawnet

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Conn is a TCP or unix socket whose Read and Write are RawSyscalls on
// the non-blocking socket (see the package doc for why). They wait
// through the same netpoller as the net package (syscall.RawConn), so
// deadlines, Close and readiness behave as for a plain net.Conn; every
// other method is the socket's own.
//
// Reads and writes may run concurrently (one of each at a time, as for
// any net.Conn used by one reader and one writer).
type Conn struct {
	net.Conn
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
	// reads next (SetAwaitReply); awaitFn is its callback.
	awaitReply bool
	awaitFn    func(uintptr) bool
	wsent      bool // awaitFn: the request is written, now waiting

	emptyReads int // reads that found nothing (EAGAIN): tests count them
}

// New returns c with raw reads and writes; ok is false (and the Conn
// nil) when c is not a TCP or unix socket (TLS, test pipes): those keep
// the net package's path.
func New(c net.Conn) (r *Conn, ok bool) {
	var sc syscall.Conn
	network := ""
	switch t := c.(type) {
	case *net.TCPConn:
		sc, network = t, "tcp"
	case *net.UnixConn:
		sc, network = t, "unix"
	default:
		return nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	r = &Conn{Conn: c, rc: rc, network: network}
	r.readFn, r.writeFn, r.awaitFn = r.doRead, r.doWrite, r.doWriteAwait
	return r, true
}

// Wrap returns c with raw reads and writes when it is a TCP or unix
// socket, else c itself.
func Wrap(c net.Conn) net.Conn {
	if r, ok := New(c); ok {
		return r
	}
	return c
}

// SetAwaitReply(true) makes the next Write a request whose answer the
// caller reads next: see writeAwait. Write clears it.
func (r *Conn) SetAwaitReply(on bool) { r.awaitReply = on }

// EmptyReads counts the reads that found nothing (EAGAIN) and waited.
func (r *Conn) EmptyReads() int { return r.emptyReads }

func (r *Conn) doRead(fd uintptr) bool {
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

func (r *Conn) doWrite(fd uintptr) bool {
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
func (r *Conn) doWriteAwait(fd uintptr) bool {
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
func (r *Conn) writeAwait(p []byte) (int, error) {
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
func (r *Conn) Read(p []byte) (int, error) {
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
func (r *Conn) Write(p []byte) (int, error) {
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

func (r *Conn) opError(op string, e syscall.Errno) error {
	return &net.OpError{Op: op, Net: r.network, Source: r.Conn.LocalAddr(), Addr: r.Conn.RemoteAddr(), Err: os.NewSyscallError(op, e)}
}
