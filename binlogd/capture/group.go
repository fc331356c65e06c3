package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/go-mysql-org/go-mysql/replication"

	"phxgo/binlogd/binlog"
)

// unit is one whole transaction cut from the stream, or one piece of a
// transaction bigger than the grouper's fragment size (txn.More, Offset),
// with the binlog position where its last event ends and whether the
// master asked for an ACK on that event (only ever on a transaction's
// end).
type unit struct {
	txn     binlog.Txn
	end     Position
	needAck bool
	// commitID: the MariaDB group commit the transaction was part of,
	// zero if it committed alone (decoded.commitID).
	commitID uint64
}

// grouper turns the event stream of one dump connection into whole
// transactions. It is pure (no I/O) so it can be fuzzed.
//
// A MariaDB event group starts with a GTID event and ends with
//   - an XID event (transactional engines),
//   - a COMMIT or ROLLBACK query (non-transactional changes),
//   - an XA_PREPARE event, or an XA COMMIT / XA ROLLBACK query,
//   - the first query of a standalone group (FL_STANDALONE: DDL).
//
// Invariant: an event that carries the ACK request ends a transaction
// (the master registers the transaction's end position as the one to
// wait for); anything else is a grouping bug and fails the stream.
//
// Streaming. With fragBytes > 0 a transaction is never held whole: once
// its buffered events reach fragBytes (at an event boundary) they leave
// as a piece and the buffer starts over, so the grouper holds at most
// fragBytes plus one event. With resume set, the transaction resume.gtid
// (the first after a reconnect) skips its first resume.bytes, which are
// durable already, after checking they are the bytes that were made
// durable (CRC32).
type grouper struct {
	file      string    // binlog file of the last ROTATE; "" before the first
	fdSeen    bool      // a CRC32 FORMAT_DESCRIPTION arrived: every event's CRC32 is verified
	cur       *building // nil between transactions
	fragBytes int       // cut pieces of this size; 0: whole transactions only
	resume    *resumePoint
	// lastBytes: the size of the last whole transaction, the first
	// guess at the next one's buffer (appending event by event from nil
	// grew it 3-4 times per transaction).
	lastBytes int
}

// maxSizeGuess caps lastBytes as a buffer's starting size: one big
// transaction must not make every small one after it hold as much.
const maxSizeGuess = 64 << 10

type building struct {
	gtid       binlog.GTID
	standalone bool
	commitID   uint64
	buf        []byte
	off        uint64 // bytes of this transaction already handed out as pieces
	// skip: bytes still to drop (durable before a reconnect); crc is
	// the running CRC32 of what was dropped.
	skip uint64
	crc  uint32
}

// resumePoint is a transaction whose first bytes are durable as pieces.
type resumePoint struct {
	gtid  binlog.GTID
	bytes uint64
	crc   uint32 // CRC32 (IEEE) of those bytes
}

func newGrouper() *grouper { return &grouper{} }

// feed takes one event (as sent, CRC32 included). It returns a unit when
// the event ends a transaction, nil otherwise.
func (g *grouper) feed(ev []byte, needAck bool) (*unit, error) {
	if len(ev) < binlog.HeaderLen {
		return nil, fmt.Errorf("%w: %d-byte event", ErrProtocol, len(ev))
	}
	if size := binary.LittleEndian.Uint32(ev[9:]); int(size) != len(ev) {
		return nil, fmt.Errorf("%w: event_size %d in a %d-byte event", ErrProtocol, size, len(ev))
	}
	typ := replication.EventType(ev[4])
	logPos := uint64(binary.LittleEndian.Uint32(ev[13:]))
	if typ == replication.HEARTBEAT_EVENT || typ == replication.HEARTBEAT_LOG_EVENT_V2 {
		if needAck {
			return nil, fmt.Errorf("%w: ACK requested on a heartbeat", ErrProtocol)
		}
		return nil, nil
	}
	if typ == replication.ROTATE_EVENT {
		if g.cur != nil {
			return nil, fmt.Errorf("%w: ROTATE inside transaction %v", ErrProtocol, g.cur.gtid)
		}
		name, err := rotateName(ev)
		if err != nil {
			return nil, err
		}
		g.file = name
		return nil, nil
	}
	switch typ {
	case replication.MARIADB_QUERY_COMPRESSED_EVENT,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return nil, fmt.Errorf("%w: compressed %v event (log_bin_compress must be OFF)", ErrProtocol, typ)
	}
	if typ != replication.FORMAT_DESCRIPTION_EVENT && !g.fdSeen {
		// Before a FORMAT_DESCRIPTION no checksum algorithm is known.
		return nil, fmt.Errorf("%w: %v event before FORMAT_DESCRIPTION", ErrProtocol, typ)
	}
	e, err := decodeEvent(ev, g.fdSeen)
	if err != nil {
		return nil, err
	}
	ends := false
	switch typ {
	case replication.FORMAT_DESCRIPTION_EVENT:
		if g.cur != nil {
			return nil, fmt.Errorf("%w: FORMAT_DESCRIPTION inside transaction %v", ErrProtocol, g.cur.gtid)
		}
		if !e.crc32 {
			return nil, fmt.Errorf("%w: binlog file %q is not checksummed with CRC32 (binlog_checksum must be CRC32)", ErrProtocol, g.file)
		}
		g.fdSeen = true
	case replication.MARIADB_GTID_EVENT:
		if g.cur != nil {
			return nil, fmt.Errorf("%w: GTID %v inside transaction %v", ErrProtocol, e.gtid, g.cur.gtid)
		}
		gtid := e.gtid
		g.cur = &building{gtid: gtid, standalone: e.standalone, commitID: e.commitID}
		if g.lastBytes > 0 && g.resume == nil {
			g.cur.buf = make([]byte, 0, min(g.lastBytes, maxSizeGuess))
		}
		if r := g.resume; r != nil {
			switch {
			case gtid == r.gtid:
				g.cur.skip = r.bytes
			case gtid.Domain == r.gtid.Domain && gtid.Seq >= r.gtid.Seq:
				return nil, fmt.Errorf("%w: GTID %v after a reconnect, want %v again (%d bytes of it are durable)", ErrProtocol, gtid, r.gtid, r.bytes)
			}
		}
		if err := g.take(ev); err != nil {
			return nil, err
		}
	default:
		if g.cur == nil {
			break // GTID_LIST, BINLOG_CHECKPOINT, STOP...: not part of a transaction
		}
		if err := g.take(ev); err != nil {
			return nil, err
		}
		switch typ {
		case replication.XID_EVENT, replication.XA_PREPARE_LOG_EVENT:
			ends = true
		case replication.QUERY_EVENT:
			ends = g.cur.standalone || endsGroup(e.query)
		}
	}
	if !ends {
		if needAck {
			return nil, fmt.Errorf("%w: ACK requested on a %v event at %s:%d that ends no transaction", ErrProtocol, typ, g.file, logPos)
		}
		if cur := g.cur; cur != nil && g.fragBytes > 0 && len(cur.buf) >= g.fragBytes {
			return g.piece(Position{File: g.file, Pos: logPos}, true, false)
		}
		return nil, nil
	}
	if g.file == "" {
		return nil, fmt.Errorf("%w: transaction %v before any ROTATE", ErrProtocol, g.cur.gtid)
	}
	if g.cur.skip > 0 {
		return nil, fmt.Errorf("%w: transaction %v ended %d bytes before its durable prefix did", ErrProtocol, g.cur.gtid, g.cur.skip)
	}
	return g.piece(Position{File: g.file, Pos: logPos}, false, needAck)
}

// take appends ev to the transaction being built, or drops it while the
// durable prefix of a resumed transaction is being skipped.
func (g *grouper) take(ev []byte) error {
	cur := g.cur
	if cur.skip == 0 {
		if n := len(cur.buf) + len(ev); g.fragBytes > 0 && n > cap(cur.buf) && n > 64<<10 {
			// A big transaction: size the piece's buffer once instead of
			// doubling it (up to twice FragmentBytes held per piece). A
			// piece that reaches FragmentBytes with this event is cut
			// right after it: it needs no room for another (with 1 MiB
			// rows, room for one more would hold 1.5 MiB per 1 MiB piece).
			want := n
			if n < g.fragBytes {
				want = g.fragBytes + len(ev)
			}
			nb := make([]byte, len(cur.buf), want)
			copy(nb, cur.buf)
			cur.buf = nb
		}
		cur.buf = append(cur.buf, ev...)
		return nil
	}
	if uint64(len(ev)) > cur.skip {
		return fmt.Errorf("%w: transaction %v re-sent with an event across its durable prefix's end (%d bytes left)", ErrProtocol, cur.gtid, cur.skip)
	}
	cur.crc = crc32.Update(cur.crc, crc32.IEEETable, ev)
	cur.skip -= uint64(len(ev))
	if cur.skip == 0 {
		r := g.resume
		if cur.crc != r.crc {
			return fmt.Errorf("%w: transaction %v re-sent with other bytes than its durable prefix (CRC32 %08x, durable %08x)", ErrProtocol, cur.gtid, cur.crc, r.crc)
		}
		cur.off = r.bytes
		g.resume = nil
	}
	return nil
}

// piece hands out what is buffered: the rest of the transaction (more
// false), or a piece of it.
func (g *grouper) piece(end Position, more, needAck bool) (*unit, error) {
	cur := g.cur
	u := &unit{txn: binlog.Txn{GTID: cur.gtid, Events: cur.buf, More: more, Offset: cur.off}, end: end, needAck: needAck, commitID: cur.commitID}
	if more {
		cur.off += uint64(len(cur.buf))
		cur.buf = nil
	} else {
		if cur.off == 0 {
			g.lastBytes = len(cur.buf)
		}
		g.cur = nil
	}
	return u, nil
}

// endsGroup reports whether a query event terminates a non-standalone
// event group.
func endsGroup(q []byte) bool {
	q = bytes.TrimSpace(q)
	for _, w := range [][]byte{[]byte("COMMIT"), []byte("ROLLBACK"), []byte("XA COMMIT"), []byte("XA ROLLBACK")} {
		if len(q) >= len(w) && bytes.EqualFold(q[:len(w)], w) && (len(q) == len(w) || !isIdent(q[len(w)])) {
			return true
		}
	}
	return false
}

func isIdent(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// rotateName decodes a ROTATE event itself: the fake ROTATE that opens
// the stream comes before any FORMAT_DESCRIPTION, so go-mysql's parser
// would not know to strip its CRC32 and would return the checksum bytes
// as part of the name, and an ACK naming a wrong file could release
// commits that are not durable. With @master_binlog_checksum='CRC32'
// every ROTATE carries a CRC32, which is verified here.
func rotateName(ev []byte) (string, error) {
	const body = binlog.HeaderLen + 8
	if len(ev) < body+1+4 {
		return "", fmt.Errorf("%w: %d-byte ROTATE", ErrProtocol, len(ev))
	}
	n := len(ev) - 4
	if crc32.ChecksumIEEE(ev[:n]) != binary.LittleEndian.Uint32(ev[n:]) {
		return "", fmt.Errorf("%w: ROTATE checksum mismatch (binlog_checksum must be CRC32)", ErrProtocol)
	}
	name := ev[body:n]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	if len(name) == 0 {
		return "", fmt.Errorf("%w: ROTATE without a file name", ErrProtocol)
	}
	return string(name), nil
}
