package reseed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Files mariadb-backup writes into the copy.
const (
	BinlogInfoFile = "xtrabackup_binlog_info" // "<binlog file>\t<pos>\t<@@gtid_current_pos>"
	SlaveInfoFile  = "xtrabackup_slave_info"  // "SET GLOBAL gtid_slave_pos = '<pos>';\nCHANGE MASTER TO master_use_gtid = slave_pos"
)

// gtidList is a MariaDB GTID position: domain-server-seq, comma separated.
var gtidList = regexp.MustCompile(`^(\d+-\d+-\d+)(,\d+-\d+-\d+)*$`)

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
			if !gtidList.MatchString(f[2]) {
				return "", "", fmt.Errorf("reseed: %s holds %q, not a GTID position", BinlogInfoFile, f[2])
			}
			return f[2], BinlogInfoFile, nil
		}
	}
	s, serr := os.ReadFile(filepath.Join(dir, SlaveInfoFile))
	if serr == nil {
		if m := slavePos.FindSubmatch(s); m != nil {
			if len(m[1]) > 0 && !gtidList.Match(m[1]) {
				return "", "", fmt.Errorf("reseed: %s holds %q, not a GTID position", SlaveInfoFile, m[1])
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
