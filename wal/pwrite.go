package wal

import (
	"io"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// rawWriteMax is the largest frame written with a raw system call.
const rawWriteMax = 256 << 10

// writeFrameAt writes b at off in f, a segment, and fails unless all of
// it was written.
//
// A frame of up to rawWriteMax bytes is written with RawSyscall, not
// the os package's Syscall: entering a Syscall wakes the runtime's
// sysmon from its deep sleep, and a write per group was enough to keep
// it polling (syncer.go, package binlogd/rawnet). A write into the page
// cache does not wait for the disk, so holding the P through it costs
// little. The exceptions are waits inside the kernel: dirty-page
// throttling (up to 200 ms when the host's dirty memory is over its
// limit), a page under writeback on a device that wants stable pages,
// memory reclaim. Meanwhile the P is held: with one P (binlogd's default
// on small hosts) the whole process waits, and at any GOMAXPROCS a
// stop-the-world of the garbage collector waits for the write. Such
// waits stay far within any lease. Bigger frames (big transactions) take
// longer to copy and keep the Syscall, so the runtime may run other
// goroutines meanwhile.
//
// The package is for 64-bit Linux: the offset goes in one register.
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
	runtime.KeepAlive(f) // fd stays open through the writes
	return n, nil
}
