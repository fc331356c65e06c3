//go:build !linux

package wal

import (
	"errors"
	"os"
)

// uring is Linux's; elsewhere segment syncs use the system call.
type uring struct{}

var errRingBroken = errors.New("wal: io_uring failed")

func newURing() (*uring, error) { return nil, errors.New("io_uring is Linux only") }

func (*uring) fdatasync(*os.File) error { return errRingBroken }

func (*uring) close() {}
