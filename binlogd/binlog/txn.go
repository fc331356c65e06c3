package binlog

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// HeaderLen is the size of a binlog v4 event header.
const HeaderLen = 19

// ErrBadEvent is returned for bytes that do not frame as binlog events.
var ErrBadEvent = errors.New("binlog: malformed event")

// Txn is one whole transaction: its GTID and its raw events (see package doc).
type Txn struct {
	GTID   GTID
	Events []byte
}

// SplitEvents returns the events framed in b, without copying.
func SplitEvents(b []byte) ([][]byte, error) {
	var out [][]byte
	for off := 0; off < len(b); {
		if len(b)-off < HeaderLen {
			return nil, fmt.Errorf("%w: %d trailing bytes at offset %d", ErrBadEvent, len(b)-off, off)
		}
		size := int(binary.LittleEndian.Uint32(b[off+9:]))
		if size < HeaderLen || size > len(b)-off {
			return nil, fmt.Errorf("%w: event_size %d at offset %d of %d", ErrBadEvent, size, off, len(b))
		}
		out = append(out, b[off:off+size])
		off += size
	}
	return out, nil
}
