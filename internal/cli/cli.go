package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1 // a runtime error
	ExitUsage   = 2 // a bad command line
)

// UsageError is a bad command line (exit 2).
type UsageError struct {
	Err error
	// Printed: the flag package already wrote Err and the usage.
	Printed bool
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// IsHelp reports whether arg (a command's first argument) asks for usage.
func IsHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// ParseArgs parses args into fs (which must be flag.ContinueOnError).
// It returns flag.ErrHelp for -h (fs printed the usage) and a printed
// *UsageError for a bad flag.
func ParseArgs(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &UsageError{Err: err, Printed: true}
}

// Parse is ParseArgs for a command that takes no positional arguments:
// one left after the flags is a UsageError, never silently ignored.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("%s: unexpected arguments %q (flags go before them; this command takes none)", fs.Name(), fs.Args())
	}
	return nil
}

// Code is the exit code for err: 0 for nil and flag.ErrHelp, 2 for a
// UsageError, 1 otherwise.
func Code(err error) int {
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ue):
		return ExitUsage
	}
	return ExitFailure
}

// Report writes err to w as "name: err" (unless the flag package wrote
// it already, or it is nil or flag.ErrHelp) and returns its exit code.
func Report(w io.Writer, name string, err error) int {
	code := Code(err)
	var ue *UsageError
	if code != ExitOK && !(errors.As(err, &ue) && ue.Printed) {
		msg := err.Error()
		if !strings.HasPrefix(msg, name+": ") { // a flag set named as the binary
			msg = name + ": " + msg
		}
		fmt.Fprintln(w, msg)
	}
	return code
}
