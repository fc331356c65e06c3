//go:build !linux

package cpuprio

import (
	"errors"
	"os/exec"
)

var errUnsupported = errors.New("cpuprio: per-thread nice values are supported on Linux only")

// ErrPermission: the process may not lower a nice value.
var ErrPermission = errors.New("not permitted")

// Nice is unsupported off Linux.
func Nice() (int, error) { return 0, errUnsupported }

// SetNice is unsupported off Linux.
func SetNice(int) error { return errUnsupported }

// Start starts cmd as is: off Linux the child keeps this process's priority.
func Start(cmd *exec.Cmd, _ int) error { return cmd.Start() }

// CanSet is unsupported off Linux.
func CanSet(int) error { return errUnsupported }
