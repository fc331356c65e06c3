package recovery

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"phxgo/binlogd/binlog"
)

var (
	// ErrNotBinlog is returned for a file without the binlog magic.
	ErrNotBinlog = errors.New("recovery: not a binlog file")
	// ErrUnreachable means the cluster could not say what is valid; nothing was changed.
	ErrUnreachable = errors.New("recovery: cluster unreachable; binlog left unchanged")
	// ErrCommittedPastCut means InnoDB committed transactions the log does
	// not hold; the node must be reseeded.
	ErrCommittedPastCut = errors.New("recovery: InnoDB committed past the cut")
	// ErrNonTransactionalCut means the cut would remove DDL (or a
	// non-transactional write) MariaDB already applied; the node must be
	// reseeded.
	ErrNonTransactionalCut = errors.New("recovery: a cut DDL cannot be undone")
)

var magic = []byte{0xfe, 'b', 'i', 'n'}

// Binlog event types this package looks at.
const (
	typeQuery          = 2
	typeRotate         = 4
	typeFormatDesc     = 15
	typeXID            = 16
	typeMariaGTID      = 162
	gtidFlagStandalone = 1
	// gtidFlagTransactional marks a group MariaDB wrote for a
	// transactional engine only (InnoDB): XA recovery rolls it back when
	// it is cut. Its absence means DDL or a non-transactional write.
	gtidFlagTransactional = 4
	gtidFlagDDL           = 32
)

// Group is one GTID group (a transaction) in a local binlog file.
type Group struct {
	GTID  binlog.GTID
	File  string // base name, e.g. binlog.000003
	Start int64  // offset of its GTID event
	End   int64  // offset just past its last event
	// Complete is false for a group torn by a crash (no ending event).
	Complete bool
	// Transactional is the GTID event's FL_TRANSACTIONAL flag: the group
	// changed InnoDB tables only, so a cut undoes it. DDL is the FL_DDL
	// flag. A group that is not transactional (DDL, or a write to a
	// non-transactional table) mostly survives a cut: see NonTransactionalCut.
	Transactional, DDL bool
}

// Files returns the binlog files listed in the index, oldest first, as
// absolute paths.
func Files(indexPath string) ([]string, error) {
	b, err := os.ReadFile(indexPath)
	if err != nil {
		return nil, fmt.Errorf("recovery: read index: %w", err)
	}
	dir := filepath.Dir(indexPath)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(dir, filepath.Base(l))
		}
		out = append(out, l)
	}
	return out, nil
}

// ScanFile lists the GTID groups in one binlog file. A torn tail (a
// partial event) ends the scan without error: it is reported as the file's
// valid length, validLen.
func ScanFile(path string) (groups []Group, validLen int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	head := make([]byte, 4)
	if _, err := io.ReadFull(r, head); err != nil || string(head) != string(magic) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotBinlog, path)
	}
	base := filepath.Base(path)
	off := int64(4)
	var cur *Group
	hdr := make([]byte, binlog.HeaderLen)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			break // EOF or torn header
		}
		typ := hdr[4]
		serverID := binary.LittleEndian.Uint32(hdr[5:])
		size := int64(binary.LittleEndian.Uint32(hdr[9:]))
		if size < binlog.HeaderLen {
			break
		}
		body := make([]byte, size-binlog.HeaderLen)
		if _, err := io.ReadFull(r, body); err != nil {
			break // torn event
		}
		start := off
		off += size
		switch typ {
		case typeMariaGTID:
			if cur != nil {
				groups = append(groups, *cur) // torn: a new group began without an end
			}
			if len(body) < 13 {
				return nil, 0, fmt.Errorf("recovery: %s@%d: short GTID event", base, start)
			}
			cur = &Group{
				GTID: binlog.GTID{Seq: binary.LittleEndian.Uint64(body), Domain: binary.LittleEndian.Uint32(body[8:]), Server: serverID},
				File: base, Start: start, End: off,
			}
			cur.Transactional = body[12]&gtidFlagTransactional != 0
			cur.DDL = body[12]&gtidFlagDDL != 0
		case typeXID:
			if cur != nil {
				cur.End, cur.Complete = off, true
				groups = append(groups, *cur)
				cur = nil
			}
		case typeQuery:
			if cur != nil {
				cur.End = off
				// A Query ends the group when it is COMMIT (non-transactional
				// tables) or when the group is standalone DDL. BEGIN does not.
				if !queryIs(body, "BEGIN") {
					cur.Complete = true
					groups = append(groups, *cur)
					cur = nil
				}
			}
		default:
			if cur != nil {
				cur.End = off
			}
		}
	}
	if cur != nil {
		groups = append(groups, *cur)
	}
	return groups, off, nil
}

// queryIs reports whether a QUERY_EVENT body's statement is stmt.
// Post-header: thread_id 4, exec_time 4, db_len 1, error_code 2,
// status_vars_len 2; then status vars, db name, NUL, statement.
func queryIs(body []byte, stmt string) bool {
	if len(body) < 13 {
		return false
	}
	dbLen := int(body[8])
	svLen := int(binary.LittleEndian.Uint16(body[11:]))
	p := 13 + svLen + dbLen + 1
	if p > len(body) {
		return false
	}
	q := body[p:]
	if len(q) >= 4 {
		q = q[:len(q)-4] // CRC32 footer (binlog_checksum=CRC32)
	}
	return strings.EqualFold(strings.TrimSpace(string(q)), stmt)
}

// Scan lists the GTID groups of every binlog file in the index.
func Scan(indexPath string) ([]Group, error) {
	files, err := Files(indexPath)
	if err != nil {
		return nil, err
	}
	var all []Group
	for _, f := range files {
		g, _, err := ScanFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, g...)
	}
	return all, nil
}
