package reseed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Files mariadb-backup writes into the copy.
const (
	BinlogInfoFile = "xtrabackup_binlog_info" // "<binlog file>\t<pos>\t<@@gtid_current_pos>"
	SlaveInfoFile  = "xtrabackup_slave_info"  // "SET GLOBAL gtid_slave_pos = '<pos>';\nCHANGE MASTER TO master_use_gtid = slave_pos"
)

// gtidList is a MariaDB GTID position: domain-server-seq, comma separated.
var gtidList = regexp.MustCompile(`^(\d+-\d+-\d+)(,\d+-\d+-\d+)*$`)

// validPosition checks a GTID position as MariaDB's SET GLOBAL
// gtid_slave_pos would: the shape (gtidList), a 32-bit domain and server,
// a 64-bit sequence number, each domain once. The copy's position comes
// from the source; one MariaDB refuses (0-1-5,0-2-6: error 1943) failed
// the reseed only after the copy was swapped in (red-team pass, session
// 37).
func validPosition(pos string) error {
	if !gtidList.MatchString(pos) {
		return fmt.Errorf("%q is not a GTID position", pos)
	}
	domains := map[uint64]bool{}
	for _, g := range strings.Split(pos, ",") {
		f := strings.Split(g, "-")
		d, derr := strconv.ParseUint(f[0], 10, 32)
		_, serr := strconv.ParseUint(f[1], 10, 32)
		_, qerr := strconv.ParseUint(f[2], 10, 64)
		if err := errors.Join(derr, serr, qerr); err != nil {
			return fmt.Errorf("%q: GTID %s out of range: %w", pos, g, err)
		}
		if domains[d] {
			return fmt.Errorf("%q names domain %d twice", pos, d)
		}
		domains[d] = true
	}
	return nil
}

var slavePos = regexp.MustCompile(`gtid_slave_pos\s*=\s*'([0-9,\-]*)'`)

// Position is the GTID position of the data in a prepared copy: every
// transaction up to it is in the copy, none after. See doc.go for why the
// binlog info's gtid_current_pos is preferred. "" (with a nil error) means
// the source had applied no transaction at all.
func Position(dir string) (pos, from string, err error) {
	b, berr := os.ReadFile(filepath.Join(dir, BinlogInfoFile))
	if berr == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			if err := validPosition(f[2]); err != nil {
				return "", "", fmt.Errorf("reseed: %s: %w", BinlogInfoFile, err)
			}
			return f[2], BinlogInfoFile, nil
		}
	}
	s, serr := os.ReadFile(filepath.Join(dir, SlaveInfoFile))
	if serr == nil {
		if m := slavePos.FindSubmatch(s); m != nil {
			if len(m[1]) > 0 {
				if err := validPosition(string(m[1])); err != nil {
					return "", "", fmt.Errorf("reseed: %s: %w", SlaveInfoFile, err)
				}
			}
			return string(m[1]), SlaveInfoFile, nil
		}
	}
	if berr == nil {
		// A binlog info without a GTID: the source had binlogged nothing.
		return "", BinlogInfoFile, nil
	}
	return "", "", errors.Join(fmt.Errorf("reseed: the copy has no GTID position (neither %s nor %s with a GTID)", BinlogInfoFile, SlaveInfoFile), berr, serr)
}
