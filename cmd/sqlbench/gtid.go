package main

import (
	"fmt"
	"strconv"
	"strings"
)

// gtidPos is a MariaDB GTID position (@@gtid_binlog_pos, @@gtid_slave_pos):
// the last sequence number per replication domain.
type gtidPos map[uint64]uint64

// parseGTIDPos parses "0-1-100,1-2-7" (the empty string is the empty position).
func parseGTIDPos(s string) (gtidPos, error) {
	p := gtidPos{}
	for _, g := range strings.Split(strings.TrimSpace(s), ",") {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		f := strings.Split(g, "-")
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: %q", errBadGTID, g)
		}
		d, err1 := strconv.ParseUint(f[0], 10, 32)
		_, err2 := strconv.ParseUint(f[1], 10, 32)
		n, err3 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("%w: %q", errBadGTID, g)
		}
		if n > p[d] {
			p[d] = n
		}
	}
	return p, nil
}

// covers reports whether p has applied everything in want: in every
// domain of want, p's sequence number is at least want's. (In GTID strict
// mode a domain's sequence numbers only grow, whichever server wrote them.)
func (p gtidPos) covers(want gtidPos) bool {
	for d, n := range want {
		if p[d] < n {
			return false
		}
	}
	return true
}

// merge returns the per-domain maximum of p and q.
func (p gtidPos) merge(q gtidPos) gtidPos {
	out := gtidPos{}
	for d, n := range p {
		out[d] = n
	}
	for d, n := range q {
		if n > out[d] {
			out[d] = n
		}
	}
	return out
}
