package preflight

import "phxgo/wal"

// checkIOURing says how the Paxos log will flush its writes: through
// io_uring (wal_io_uring, the default), or by the fdatasync system call
// where the kernel refuses a ring. Only a warn: the system call is as
// durable, it costs binlogd more CPU (README, "Where binlogd's CPU
// goes").
func checkIOURing(useRing bool) Result {
	const name = "wal io_uring"
	if !useRing {
		return ok(name, "wal_io_uring is false: the log flushes with the fdatasync system call")
	}
	if err := wal.CheckIOURing(); err != nil {
		return warn(name, "allow io_uring (sysctl kernel.io_uring_disabled=0; no seccomp filter refusing io_uring_setup), or set \"wal_io_uring\": false to say the system call is meant",
			"no io_uring for binlogd (%v): the log will flush with the fdatasync system call, as durable but with more CPU per commit", err)
	}
	return ok(name, "the log flushes through io_uring")
}
