package cpuprio

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
)

// Nice is the calling thread's nice value.
func Nice() (int, error) {
	return threadNice(0)
}

func threadNice(tid int) (int, error) {
	// The raw system call returns 20-nice (never negative); the syscall
	// package passes that through.
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return 0, fmt.Errorf("cpuprio: getpriority: %w", err)
	}
	return 20 - p, nil
}

// SetNice sets every thread of this process to nice n. It stops at the
// first thread it may not change (ErrPermission: lowering needs
// CAP_SYS_NICE) and reports it; threads that exited meanwhile are
// skipped.
func SetNice(n int) error {
	if err := checkRange(n); err != nil {
		return err
	}
	// A thread the runtime clones while this runs copies its creator's
	// value, old or new: a second pass catches it.
	for pass := 0; pass < 2; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("cpuprio: list threads: %w", err)
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil {
				if errors.Is(err, syscall.ESRCH) {
					continue
				}
				return fmt.Errorf("cpuprio: set nice %d: %w", n, permission(err))
			}
		}
	}
	return nil
}

// Start starts cmd at nice n: it forks from an OS thread of its own set
// to n, which is then discarded, so no other goroutine runs at n and no
// thread of this process keeps it. Raising the value above this
// process's needs no privilege; lowering it does (ErrPermission, and
// cmd is not started).
func Start(cmd *exec.Cmd, n int) error {
	if err := checkRange(n); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, and its
		// nice value with it.
		runtime.LockOSThread()
		if syscall.Gettid() == os.Getpid() {
			// The main thread is not ended but parked for good, and ps
			// shows its value as the process's: fork from another
			// thread (this goroutine holds the main one meanwhile).
			errc <- Start(cmd, n)
			runtime.UnlockOSThread()
			return
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), n); err != nil {
			errc <- fmt.Errorf("cpuprio: set nice %d for %s: %w", n, cmd.Path, permission(err))
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// CanSet reports whether this process may run a thread at nice n: it
// tries on a thread of its own, which is then discarded.
func CanSet(n int) error {
	if err := checkRange(n); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its value
		if syscall.Gettid() == os.Getpid() {
			errc <- CanSet(n) // not on the main thread (see Start)
			runtime.UnlockOSThread()
			return
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), n); err != nil {
			errc <- fmt.Errorf("cpuprio: set nice %d: %w", n, permission(err))
			return
		}
		errc <- nil
	}()
	return <-errc
}

// ErrPermission: the process may not lower a nice value (no CAP_SYS_NICE).
var ErrPermission = errors.New("not permitted (lowering a nice value needs root or CAP_SYS_NICE)")

func permission(err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		return fmt.Errorf("%w: %w", ErrPermission, err)
	}
	return err
}

func checkRange(n int) error {
	if n < -20 || n > 19 {
		return fmt.Errorf("cpuprio: nice %d out of range -20..19", n)
	}
	return nil
}
