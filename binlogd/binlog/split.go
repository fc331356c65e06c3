package binlog

import (
	"encoding/binary"
	"fmt"
)

// EventMariaGTID is the MariaDB GTID event type: it opens every transaction.
const EventMariaGTID = 162

// GTIDOf decodes the GTID of a MariaDB GTID event (header + body).
func GTIDOf(ev []byte) (GTID, error) {
	if len(ev) < HeaderLen+12 || ev[4] != EventMariaGTID {
		return GTID{}, fmt.Errorf("%w: not a GTID event", ErrBadEvent)
	}
	b := ev[HeaderLen:]
	return GTID{
		Seq:    binary.LittleEndian.Uint64(b),
		Domain: binary.LittleEndian.Uint32(b[8:]),
		Server: binary.LittleEndian.Uint32(ev[5:]),
	}, nil
}

// SplitTxns cuts a concatenation of whole transactions (the events of a
// BinlogBatch) at its GTID events. The result aliases b.
func SplitTxns(b []byte) ([]Txn, error) {
	if _, err := CountEvents(b); err != nil {
		return nil, err
	}
	var out []Txn
	start, off := 0, 0
	for ev, rest := NextEvent(b); ev != nil; ev, rest = NextEvent(rest) {
		if ev[4] == EventMariaGTID {
			g, err := GTIDOf(ev)
			if err != nil {
				return nil, err
			}
			if len(out) > 0 {
				out[len(out)-1].Events = b[start:off]
			}
			out = append(out, Txn{GTID: g})
			start = off
		} else if len(out) == 0 {
			return nil, fmt.Errorf("%w: event type %d before the first GTID event", ErrBadEvent, ev[4])
		}
		off += len(ev)
	}
	if len(out) > 0 {
		out[len(out)-1].Events = b[start:]
	}
	return out, nil
}
