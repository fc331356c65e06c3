package checker

import "errors"

// Errors about malformed histories (a checker then reports Unknown).
var (
	// ErrUnknownOp: an operation the checker does not understand.
	ErrUnknownOp = errors.New("unknown operation")
)
