// Package rawnet reads and writes TCP and unix sockets with RawSyscall
// instead of the net package's Syscall, for the processes whose hot path
// is a few small reads and writes per request: binlogd's links to its
// peers, its binlog capture, its replication endpoint and its
// go-sql-driver pools to MariaDB (DialContext), and sqlproxy.
//
// Why: a Syscall marks the goroutine's P as in a system call, and that
// costs twice.
//
//   - Entering any system call wakes the runtime's sysmon if it was in
//     its deep sleep (runtime.entersyscallWakeSysmon). Awake, sysmon
//     polls every 20 µs for at least 50 rounds before it backs off. A
//     binlogd with one P goes idle between Paxos values hundreds of
//     times a second, and each value's first socket write, file write
//     or fdatasync woke sysmon again: profiled under sysbench inserts,
//     sysmon's polling was a fifth of binlogd's CPU (issue 19), and the
//     wake-ups came from every kind of system call, not one.
//   - Awake, sysmon takes the P from any system call that spans one of
//     its ticks (a loopback write that wakes the reader can) and starts
//     another thread to run it: a thread hand-off per request. Profiled
//     under point selects, sysmon alone was a sixth of sqlproxy's CPU.
//
// A read or write on a non-blocking socket never blocks (EAGAIN
// instead, and the goroutine then waits in the netpoller as usual), so
// holding the P through it costs nothing a hand-off would save. The
// wal's segment writes and fdatasyncs avoid Syscall the same way
// (package wal: a raw pwrite, and fdatasync through io_uring); together
// they cut binlogd's CPU per transaction to about 0.8x (README, "Where
// binlogd's CPU goes").
//
// Only sockets are wrapped: TLS runs on top of a Conn unchanged, and
// anything else (pipes in tests) keeps the net package's path.
//
// SetUserTimeout, the TCP_USER_TIMEOUT setter binlogd's peer links and
// sqlproxy's connections share, lives here for the same reason as the
// rest: it is socket plumbing both daemons need.
package rawnet
