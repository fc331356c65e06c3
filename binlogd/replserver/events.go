package replserver

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"

	"phxgo/binlogd/binlog"
)

// Binlog v4 event types and flags used by the endpoint (MariaDB
// log_event.h numbering).
const (
	evRotate            = 4
	evFormatDescription = 15
	evXID               = 16
	evHeartbeat         = 27
	evAnnotateRows      = 160
	evGTIDList          = 163

	flagArtificial = 0x20 // LOG_EVENT_ARTIFICIAL_F: not in a real binlog file

	checksumLen   = 4
	checksumCRC32 = 1 // BINLOG_CHECKSUM_ALG_CRC32

	logPosOffset    = 13
	eventSizeOffset = 9
	serverIDOffset  = 5

	// binlogStart is the first event's offset in a binlog file (after the
	// 4-byte magic).
	binlogStart = 4

	// fdeServerVersion is written into FORMAT_DESCRIPTION (50 bytes, NUL
	// padded). A replica reads bug-workaround decisions from it, so it names
	// the MariaDB release whose event layout we reproduce.
	fdeServerVersion = "10.11.19-MariaDB-phxgo-log"
)

// fdeCaptureFile is the first event of a real MariaDB 10.11.19 binlog,
// captured byte for byte (TestCaptureFDE regenerates it).
const fdeCaptureFile = "mariadb-10.11.19-fde.bin"

//go:embed mariadb-10.11.19-fde.bin
var capturedFDE []byte

// fdePostHeaderLens is the post-header length table of MariaDB 10.11's
// FORMAT_DESCRIPTION, taken from capturedFDE: index i is event type i+1,
// and its length is the number of event types 10.11 knows.
var fdePostHeaderLens = sync.OnceValue(func() []byte {
	const fixed = binlog.HeaderLen + 2 + 50 + 4 + 1 // header, version, server version, created, header length
	if len(capturedFDE) < fixed+1+checksumLen || capturedFDE[4] != evFormatDescription {
		panic("replserver: embedded FORMAT_DESCRIPTION capture is malformed")
	}
	return capturedFDE[fixed : len(capturedFDE)-1-checksumLen]
})

// header fills a v4 event header (19 bytes) at the start of ev, whose
// len(ev) is the event_size.
func putHeader(ev []byte, ts uint32, typ byte, serverID, logPos uint32, flags uint16) {
	binary.LittleEndian.PutUint32(ev[0:], ts)
	ev[4] = typ
	binary.LittleEndian.PutUint32(ev[serverIDOffset:], serverID)
	binary.LittleEndian.PutUint32(ev[eventSizeOffset:], uint32(len(ev)))
	binary.LittleEndian.PutUint32(ev[logPosOffset:], logPos)
	binary.LittleEndian.PutUint16(ev[17:], flags)
}

// sealCRC writes the CRC32 footer over everything before it.
func sealCRC(ev []byte) {
	n := len(ev) - checksumLen
	binary.LittleEndian.PutUint32(ev[n:], crc32.ChecksumIEEE(ev[:n]))
}

// fakeRotate is the artificial ROTATE a master sends first: it names the
// (virtual) file the replica is reading and the position of the next event.
func fakeRotate(serverID uint32, file string, pos uint64) []byte {
	ev := make([]byte, binlog.HeaderLen+8+len(file)+checksumLen)
	putHeader(ev, 0, evRotate, serverID, 0, flagArtificial)
	binary.LittleEndian.PutUint64(ev[binlog.HeaderLen:], pos)
	copy(ev[binlog.HeaderLen+8:], file)
	sealCRC(ev)
	return ev
}

// formatDescription is a binlog v4 FORMAT_DESCRIPTION for MariaDB 10.11
// with CRC32 checksums. created is 0 so the replica does not treat the
// connection as a master restart (which would drop its temporary tables).
func formatDescription(ts, serverID, logPos uint32) []byte {
	body := 2 + 50 + 4 + 1 + len(fdePostHeaderLens()) + 1
	ev := make([]byte, binlog.HeaderLen+body+checksumLen)
	putHeader(ev, ts, evFormatDescription, serverID, logPos, 0)
	b := ev[binlog.HeaderLen:]
	binary.LittleEndian.PutUint16(b, 4) // binlog version
	copy(b[2:52], fdeServerVersion)
	// b[52:56] created = 0
	b[56] = binlog.HeaderLen
	copy(b[57:], fdePostHeaderLens())
	b[57+len(fdePostHeaderLens())] = checksumCRC32
	sealCRC(ev)
	return ev
}

// gtidList is a MariaDB GTID_LIST event: the binlog state before the next
// event of the stream.
func gtidList(ts, serverID, logPos uint32, l binlog.GTIDList) []byte {
	ev := make([]byte, binlog.HeaderLen+4+16*len(l)+checksumLen)
	putHeader(ev, ts, evGTIDList, serverID, logPos, 0)
	b := ev[binlog.HeaderLen:]
	binary.LittleEndian.PutUint32(b, uint32(len(l))) // high 4 bits: flags (none)
	for i, g := range l {
		o := 4 + 16*i
		binary.LittleEndian.PutUint32(b[o:], g.Domain)
		binary.LittleEndian.PutUint32(b[o+4:], g.Server)
		binary.LittleEndian.PutUint64(b[o+8:], g.Seq)
	}
	sealCRC(ev)
	return ev
}

// heartbeat is the artificial HEARTBEAT event: the current file and
// position, so the replica can check it missed nothing.
func heartbeat(serverID uint32, file string, logPos uint32) []byte {
	ev := make([]byte, binlog.HeaderLen+len(file)+checksumLen)
	putHeader(ev, 0, evHeartbeat, serverID, logPos, flagArtificial)
	copy(ev[binlog.HeaderLen:], file)
	sealCRC(ev)
	return ev
}

// relocate copies a raw event from the log into dst, giving it log_pos
// logPos and a fresh CRC32. The source event must carry a CRC32 footer
// (package binlog's wire shape).
func relocate(dst, ev []byte, logPos uint32) ([]byte, error) {
	if len(ev) < binlog.HeaderLen+checksumLen || int(binary.LittleEndian.Uint32(ev[eventSizeOffset:])) != len(ev) {
		return nil, fmt.Errorf("%w: event of %d bytes", ErrBadTxn, len(ev))
	}
	n := len(dst)
	dst = append(dst, ev...)
	out := dst[n:]
	binary.LittleEndian.PutUint32(out[logPosOffset:], logPos)
	sealCRC(out)
	return dst, nil
}
