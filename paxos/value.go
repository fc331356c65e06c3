package paxos

import (
	"encoding/binary"
	"fmt"
)

// A Paxos value is a batch of commands that share one log index:
//
//	value   = uvarint(count) command*          (empty value = Noop)
//	command = uvarint(node) uvarint(seq) uvarint(minPending) byte(flags)
//	          uvarint(len) data[len]
//
// (node, seq) identifies a command uniquely across restarts (seq starts at
// the node's incarnation, see Start), so the proposing node recognises its
// own command when applying it, even when a leader proposed it for it.
// minPending is the proposer's lowest unfinished seq when the command was
// made: every seq of that node below it is finished (applied, or abandoned
// by its caller), which lets appliers forget old ids (applier.go, the
// dedup rule).

const (
	// flagBarrier marks a Barrier: chosen and ordered like a command but
	// never passed to StateMachine.Apply nor returned by Read.
	flagBarrier byte = 1 << 0
	// flagMembership marks a membership change (membership.go): validated
	// and recorded by the core, never passed to StateMachine.Apply nor
	// returned by Read.
	flagMembership byte = 1 << 1
	knownFlags          = flagBarrier | flagMembership
)

// command is one proposed command inside a value.
type command struct {
	Node       uint32
	Seq        uint64
	MinPending uint64
	Flags      byte
	Data       []byte
}

func (c command) barrier() bool { return c.Flags&flagBarrier != 0 }

// internal reports whether c is the engine's own (a Barrier or a
// membership change): the state machine never sees it.
func (c command) internal() bool { return c.Flags&(flagBarrier|flagMembership) != 0 }

// appendCommand appends the encoding of c to b.
func appendCommand(b []byte, c command) []byte {
	b = binary.AppendUvarint(b, uint64(c.Node))
	b = binary.AppendUvarint(b, c.Seq)
	b = binary.AppendUvarint(b, c.MinPending)
	b = append(b, c.Flags)
	b = binary.AppendUvarint(b, uint64(len(c.Data)))
	return append(b, c.Data...)
}

// encodeValue joins already-encoded commands into one value.
func encodeValue(cmds [][]byte) []byte {
	n := binary.MaxVarintLen64
	for _, c := range cmds {
		n += len(c)
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(cmds)))
	for _, c := range cmds {
		b = append(b, c...)
	}
	return b
}

// decodeCommand decodes one command from the front of b and returns the rest.
// Data aliases b.
func decodeCommand(b []byte) (command, []byte, error) {
	var c command
	var v uint64
	var err error
	if v, b, err = uvarint(b, "node"); err != nil {
		return c, nil, err
	}
	if v > 1<<32-1 {
		return c, nil, fmt.Errorf("%w: node id %d out of range", ErrBadValue, v)
	}
	c.Node = uint32(v)
	if c.Seq, b, err = uvarint(b, "seq"); err != nil {
		return c, nil, err
	}
	if c.MinPending, b, err = uvarint(b, "minPending"); err != nil {
		return c, nil, err
	}
	if c.MinPending > c.Seq {
		return c, nil, fmt.Errorf("%w: minPending %d > seq %d", ErrBadValue, c.MinPending, c.Seq)
	}
	if len(b) == 0 {
		return c, nil, fmt.Errorf("%w: truncated flags", ErrBadValue)
	}
	c.Flags, b = b[0], b[1:]
	if c.Flags&^knownFlags != 0 {
		return c, nil, fmt.Errorf("%w: unknown flags %#x", ErrBadValue, c.Flags)
	}
	if v, b, err = uvarint(b, "length"); err != nil {
		return c, nil, err
	}
	if v > uint64(len(b)) {
		return c, nil, fmt.Errorf("%w: data length %d exceeds %d remaining bytes", ErrBadValue, v, len(b))
	}
	c.Data, b = b[:v:v], b[v:]
	return c, b, nil
}

// decodeValue decodes a value into its commands; an empty value is a Noop
// and yields none. Data fields alias v.
func decodeValue(v []byte) ([]command, error) {
	if len(v) == 0 {
		return nil, nil
	}
	n, rest, err := uvarint(v, "count")
	if err != nil {
		return nil, err
	}
	// Every command takes at least 5 bytes: a sanity bound before allocating.
	if n == 0 || n > uint64(len(rest))/5 {
		return nil, fmt.Errorf("%w: command count %d for %d bytes", ErrBadValue, n, len(rest))
	}
	cmds := make([]command, 0, n)
	for i := uint64(0); i < n; i++ {
		var c command
		if c, rest, err = decodeCommand(rest); err != nil {
			return nil, fmt.Errorf("command %d: %w", i, err)
		}
		cmds = append(cmds, c)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadValue, len(rest))
	}
	return cmds, nil
}

// validCommand reports whether b is exactly one well-formed encoded command
// (a leader checks forwarded commands before proposing them).
func validCommand(b []byte) bool {
	_, rest, err := decodeCommand(b)
	return err == nil && len(rest) == 0
}

func uvarint(b []byte, what string) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: bad varint for %s", ErrBadValue, what)
	}
	return v, b[n:], nil
}
