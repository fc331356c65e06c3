package wal

import (
	"syscall"
	"unsafe"
)

// fileExists reports whether path names a file this process can see,
// with a raw faccessat(2): the apply path asks after every Badger
// transaction whether Badger rotated its memtable (memtable.go), and
// an os.Stat there was a Syscall per transaction, each waking the
// runtime's sysmon (pwrite.go). The lookup reads a cached directory, so
// holding the P through it costs nothing. Any error counts as absent,
// as an os.Stat error did.
func fileExists(path string) bool {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return false
	}
	const atFDCWD = -100
	fdcwd := atFDCWD
	_, _, e := syscall.RawSyscall6(syscall.SYS_FACCESSAT, uintptr(fdcwd), uintptr(unsafe.Pointer(p)), 0 /* F_OK */, 0, 0, 0)
	return e == 0
}
