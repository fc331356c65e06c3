package node

import (
	"encoding/binary"
	"fmt"

	"phxgo/binlogd/binlog"
	"phxgo/masterlease"
	"phxgo/paxos"
)

// A transaction too big for one log entry is in the log as fragments
// (masterlease "Fragments"), possibly hundreds of megabytes of them, and
// possibly never completed: a term change voids a split transaction
// whose last fragment did not make it. The cursor holds none of it whole:
//
//	first fragment at index i ──▶ scanning: step on, keep only the state
//	   ├─ the transaction completes at j ──▶ rewind to i, shipping: hand
//	   │     on each fragment's whole events as one piece (binlog.Txn
//	   │     More/Offset), an event cut between fragments held until whole
//	   └─ a term change voids it ──▶ nothing shipped, go on from there
//
// So a replica receives a transaction only when the log holds all of it,
// as the endpoint did when it assembled it, and the cursor's memory is
// one read of the log plus one event. The log is read twice over the
// split transaction; a compaction between the two reads is ErrPurged
// for that replica (it is reseeded), as for any cursor overtaken by one.

type splitPhase uint8

const (
	splitNone     splitPhase = iota
	splitScanning            // reading ahead to learn whether it completes
	splitShipping            // known complete: handing it on in pieces
)

type splitState struct {
	phase splitPhase
	gtid  binlog.GTID
	// seek: the cursor has not reached its start position; the split
	// transaction is only checked against it, never shipped.
	seek bool
	// Where to rewind to: the first fragment's index, the commands at
	// that index before it, and the state before it.
	start uint64
	skip  int
	state masterlease.State
	// Shipping: bytes of an event cut by a fragment boundary, and the
	// bytes handed on so far (the next piece's offset).
	tail []byte
	sent uint64
}

// stepSplit runs after every Step: it ships whole batches, follows split
// transactions, and reports rewound when it moved the cursor back to a
// split transaction's first fragment (the caller stops reading its
// chunk). earlier are the commands of the chunk before this one.
func (c *logCursor) stepSplit(before masterlease.State, v masterlease.Verdict, earlier []paxos.Command) (rewound bool, err error) {
	var b *masterlease.Batch
	if v.Valid && v.Entry.Kind == masterlease.KindBatch {
		b = &v.Entry.Batch
	}
	sp := &c.split
	switch sp.phase {
	case splitScanning:
		switch {
		case c.st.LastGTID == masterlease.GTID(sp.gtid): // its last fragment
			if sp.seek {
				c.found = c.found || sp.gtid == c.after
				*sp = splitState{}
				return false, nil
			}
			c.next, c.skip, c.st = sp.start, sp.skip, sp.state
			*sp = splitState{phase: splitShipping, gtid: sp.gtid}
			return true, nil
		case c.st.Partial != masterlease.GTID(sp.gtid): // a new term voided it
			*sp = splitState{}
		}
		return false, nil
	case splitShipping:
		if b == nil {
			return false, nil
		}
		return false, c.ship(*b)
	}
	if b == nil {
		return false, nil
	}
	if c.skipPartial {
		if b.Continued {
			c.skipPartial = b.More
			if !b.More {
				// A replica positioned on it resumes after it.
				c.partialDone = binlog.GTID(b.Last)
				c.found = c.found || c.partialDone == c.after
			}
			return false, nil
		}
		c.skipPartial = false
	}
	switch {
	case !b.More && !b.Continued:
		return false, c.takeBatch(*b)
	case b.Continued:
		return false, fmt.Errorf("continuation of %s without its first fragment", binlog.GTID(b.Last))
	}
	skip := 0
	for _, e := range earlier {
		if e.Index == v.Index {
			skip++
		}
	}
	*sp = splitState{phase: splitScanning, gtid: binlog.GTID(b.Last), seek: !c.found,
		start: v.Index, skip: skip, state: before}
	return false, nil
}

// ship hands on one fragment of the split transaction being shipped: its
// whole events as one piece, the cut event's bytes kept for the next.
func (c *logCursor) ship(b masterlease.Batch) error {
	sp := &c.split
	if binlog.GTID(b.Last) != sp.gtid {
		return fmt.Errorf("fragment of %s while shipping %s", binlog.GTID(b.Last), sp.gtid)
	}
	data, own := b.Events, false
	if len(sp.tail) > 0 {
		data, own = append(sp.tail, b.Events...), true // in place: see tailBuf
		sp.tail = nil
	}
	n, err := wholeEvents(data)
	if err != nil {
		return fmt.Errorf("split transaction %s at offset %d: %w", sp.gtid, sp.sent, err)
	}
	if rest := data[n:]; len(rest) > 0 {
		if own && n == 0 {
			sp.tail = data // nothing of it was handed on: still ours alone
		} else {
			sp.tail = tailBuf(rest, len(b.Events)) // data is the log's own buffer, or handed on
		}
	}
	if n > 0 {
		c.queue = append(c.queue, binlog.Txn{GTID: sp.gtid, Events: data[:n], More: b.More, Offset: sp.sent})
		sp.sent += uint64(n)
	}
	if !b.More {
		if len(sp.tail) > 0 {
			return fmt.Errorf("split transaction %s ends inside an event (%d bytes left)", sp.gtid, len(sp.tail))
		}
		*sp = splitState{}
	}
	return nil
}

// tailBuf copies rest, the start of an event cut by a fragment boundary,
// into a buffer with room for the whole event and one more fragment, so
// the fragments that complete it append in place: a 1 MiB event cut by
// 512 KiB fragments costs one buffer instead of four growing copies
// (each replica's endpoint allocated about four bytes per byte shipped).
// An event_size beyond 1 GiB (MariaDB's largest max_allowed_packet) is
// not trusted for a reservation: the buffer then grows by append.
func tailBuf(rest []byte, frag int) []byte {
	size := len(rest)
	if len(rest) >= binlog.HeaderLen {
		if n := int(binary.LittleEndian.Uint32(rest[9:])); n > size && n <= 1<<30 {
			size = n
		}
	}
	return append(make([]byte, 0, size+frag), rest...)
}

// wholeEvents returns the length of the longest prefix of b made of whole
// binlog events.
func wholeEvents(b []byte) (int, error) {
	off := 0
	for len(b)-off >= binlog.HeaderLen {
		size := int(binary.LittleEndian.Uint32(b[off+9:]))
		if size < binlog.HeaderLen {
			return 0, fmt.Errorf("%w: event_size %d at offset %d", binlog.ErrBadEvent, size, off)
		}
		if size > len(b)-off {
			break
		}
		off += size
	}
	return off, nil
}
