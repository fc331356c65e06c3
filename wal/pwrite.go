package wal

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// rawWriteMax is the largest frame written with a raw system call.
const rawWriteMax = 1 << 20

// writeFrameAt writes b at off in f, a segment, and fails unless all of
// it was written.
//
// A frame of up to rawWriteMax bytes is written with RawSyscall, not
// the os package's Syscall: entering a Syscall wakes the runtime's
// sysmon from its deep sleep, and a write per group was enough to keep
// it polling (syncer.go, package binlogd/rawnet). A write into the page
// cache does not wait for the disk, so holding the P through it costs
// little. The exception is the kernel's dirty-page throttling, which
// can pause a writer for up to 200 ms when the host's dirty memory is
// over its limit; with one P (binlogd's default on small hosts) the
// whole process then waits, well within any lease. Bigger frames (big
// transactions) take longer to copy and keep the Syscall, so the
// runtime may run other goroutines meanwhile.
func writeFrameAt(f *os.File, b []byte, off int64) (int, error) {
	if len(b) > rawWriteMax {
		return f.WriteAt(b, off)
	}
	fd := f.Fd()
	n := 0
	for n < len(b) {
		m, _, e := syscall.RawSyscall6(syscall.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n), uintptr(off+int64(n)), 0, 0)
		switch {
		case e == syscall.EINTR:
			continue
		case e != 0:
			return n, &os.PathError{Op: "write", Path: f.Name(), Err: e}
		case m == 0:
			return n, &os.PathError{Op: "write", Path: f.Name(), Err: io.ErrShortWrite}
		}
		n += int(m)
	}
	return n, nil
}
