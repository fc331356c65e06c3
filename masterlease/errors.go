package masterlease

import (
	"errors"
	"fmt"
)

// Sentinel errors. The first group are rejection reasons: a chosen entry
// that breaks a rule changes nothing, and its Verdict.Err() wraps one of
// them. The second group are errors of this node's API calls.
var (
	// ErrMalformed: the entry could not be decoded or breaks the encoding
	// (missing version, no kind, zero candidate, empty batch, ...).
	ErrMalformed = errors.New("masterlease: malformed entry")
	// ErrUnknownVersion: the entry's encoding version is newer than this
	// binary knows. Upgrade every node before proposing newer entries.
	ErrUnknownVersion = errors.New("masterlease: unknown entry encoding version")
	// ErrVersionMismatch: a LeaseRequest's seen_version is not the current
	// lease version (the compare-and-swap lost).
	ErrVersionMismatch = errors.New("masterlease: lease version changed")
	// ErrNotHolder: a renewal by a node that is not the current master.
	ErrNotHolder = errors.New("masterlease: renewal by a node that is not the master")
	// ErrStaleEpoch: a Fence or BinlogBatch for a term that is not the
	// current one.
	ErrStaleEpoch = errors.New("masterlease: stale epoch")
	// ErrNoMaster: the current term has no master (it was fenced).
	ErrNoMaster = errors.New("masterlease: no master in the current term")
	// ErrChain: a batch's prev_gtid is not the last valid GTID (gap,
	// duplicate or fork), or its last_gtid does not follow it.
	ErrChain = errors.New("masterlease: GTID chain broken")
	// ErrBadChecksum: the batch's CRC32C does not match its events.
	ErrBadChecksum = errors.New("masterlease: batch checksum mismatch")
	// ErrBadFragment: the fragment rules of a split transaction are broken.
	ErrBadFragment = errors.New("masterlease: bad transaction fragment")

	// ErrNotMaster: this node does not hold a valid lease (by its own
	// clock) for the operation's term. Nothing was proposed.
	ErrNotMaster = errors.New("masterlease: this node does not hold the lease")
	// ErrNotAttached: the Lease has no Log yet (see Attach).
	ErrNotAttached = errors.New("masterlease: no log attached")
	// ErrOutcomeUnknown wraps a Log error: the entry may or may not be
	// chosen later; learn its fate from the state (e.g. Status, Sync).
	ErrOutcomeUnknown = errors.New("masterlease: proposal outcome unknown")
	// ErrConfig: an invalid Config; the message names the key.
	ErrConfig = errors.New("masterlease: invalid config")
)

// Reason says why an entry was rejected; ReasonNone for valid entries.
type Reason uint8

const (
	ReasonNone Reason = iota
	ReasonMalformed
	ReasonUnknownVersion
	ReasonVersionMismatch
	ReasonNotHolder
	ReasonStaleEpoch
	ReasonNoMaster
	ReasonChain
	ReasonBadChecksum
	ReasonBadFragment
)

var reasonErrs = [...]error{
	ReasonNone:            nil,
	ReasonMalformed:       ErrMalformed,
	ReasonUnknownVersion:  ErrUnknownVersion,
	ReasonVersionMismatch: ErrVersionMismatch,
	ReasonNotHolder:       ErrNotHolder,
	ReasonStaleEpoch:      ErrStaleEpoch,
	ReasonNoMaster:        ErrNoMaster,
	ReasonChain:           ErrChain,
	ReasonBadChecksum:     ErrBadChecksum,
	ReasonBadFragment:     ErrBadFragment,
}

var reasonNames = [...]string{
	ReasonNone:            "none",
	ReasonMalformed:       "malformed",
	ReasonUnknownVersion:  "unknown_version",
	ReasonVersionMismatch: "version_mismatch",
	ReasonNotHolder:       "not_holder",
	ReasonStaleEpoch:      "stale_epoch",
	ReasonNoMaster:        "no_master",
	ReasonChain:           "chain",
	ReasonBadChecksum:     "bad_checksum",
	ReasonBadFragment:     "bad_fragment",
}

// String is a short label, suitable for logs and metric labels.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Sentinel returns the sentinel error of r (nil for ReasonNone).
func (r Reason) Sentinel() error {
	if int(r) < len(reasonErrs) {
		return reasonErrs[r]
	}
	return ErrMalformed
}

// RejectError is a rejected entry's verdict as an error. errors.Is matches
// the reason's sentinel.
type RejectError struct {
	Index  uint64
	Kind   Kind
	Reason Reason
	Detail string
	// Expected and Got: see Verdict.
	Expected, Got GTID
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("%v (%s at index %d): %s", e.Reason.Sentinel(), e.Kind, e.Index, e.Detail)
}

func (e *RejectError) Unwrap() error { return e.Reason.Sentinel() }
