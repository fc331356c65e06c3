package binlog

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// GTID is a MariaDB global transaction id, domain-server-sequence.
// The zero GTID means "none yet".
type GTID struct {
	Domain uint32
	Server uint32
	Seq    uint64
}

// ErrBadGTID is returned for text that is not domain-server-seq.
var ErrBadGTID = errors.New("binlog: malformed GTID")

func (g GTID) IsZero() bool { return g == GTID{} }

func (g GTID) String() string {
	if g.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d-%d-%d", g.Domain, g.Server, g.Seq)
}

// ParseGTID parses "domain-server-seq"; "" gives the zero GTID.
func ParseGTID(s string) (GTID, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return GTID{}, nil
	}
	p := strings.Split(s, "-")
	if len(p) != 3 {
		return GTID{}, fmt.Errorf("%w: %q", ErrBadGTID, s)
	}
	d, err1 := strconv.ParseUint(p[0], 10, 32)
	sv, err2 := strconv.ParseUint(p[1], 10, 32)
	q, err3 := strconv.ParseUint(p[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return GTID{}, fmt.Errorf("%w: %q", ErrBadGTID, s)
	}
	return GTID{Domain: uint32(d), Server: uint32(sv), Seq: q}, nil
}

// GTIDList is a MariaDB GTID position: at most one GTID per domain, as in
// @@gtid_slave_pos or @slave_connect_state.
type GTIDList []GTID

// ParseGTIDList parses "0-1-5,1-2-9" (spaces and empty items ignored).
// Two GTIDs of one domain are an error.
func ParseGTIDList(s string) (GTIDList, error) {
	var out GTIDList
	seen := map[uint32]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		g, err := ParseGTID(part)
		if err != nil {
			return nil, err
		}
		if seen[g.Domain] {
			return nil, fmt.Errorf("%w: domain %d twice in %q", ErrBadGTID, g.Domain, s)
		}
		seen[g.Domain] = true
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Domain < out[j].Domain })
	return out, nil
}

func (l GTIDList) String() string {
	parts := make([]string, len(l))
	for i, g := range l {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

// Domain returns the list's GTID for domain d.
func (l GTIDList) Domain(d uint32) (GTID, bool) {
	for _, g := range l {
		if g.Domain == d {
			return g, true
		}
	}
	return GTID{}, false
}
