package sqlproxy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// gtid is one MariaDB GTID, domain-server-seq.
type gtid struct {
	domain, server uint32
	seq            uint64
}

// gtidPos is a MariaDB GTID position: the newest GTID per domain.
type gtidPos map[uint32]gtid

// parseGTIDPos parses "0-1-42,1-2-7" (spaces and newlines allowed, as
// SHOW SLAVE STATUS prints them); "" is the empty position.
func parseGTIDPos(s string) (gtidPos, error) {
	pos := gtidPos{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f := strings.Split(part, "-")
		if len(f) != 3 {
			return nil, fmt.Errorf("gtid %q: want domain-server-seq", part)
		}
		d, err1 := strconv.ParseUint(f[0], 10, 32)
		sv, err2 := strconv.ParseUint(f[1], 10, 32)
		seq, err3 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("gtid %q: not numbers", part)
		}
		pos.add(gtid{uint32(d), uint32(sv), seq})
	}
	return pos, nil
}

// add keeps g if it is newer than pos's GTID of its domain; it reports
// whether pos changed.
func (p gtidPos) add(g gtid) bool {
	if cur, ok := p[g.domain]; ok && cur.seq >= g.seq {
		return false
	}
	p[g.domain] = g
	return true
}

// merge adds every GTID of o; it reports whether p changed.
func (p gtidPos) merge(o gtidPos) bool {
	changed := false
	for _, g := range o {
		changed = p.add(g) || changed
	}
	return changed
}

// covers reports whether p has reached want in every domain of want.
func (p gtidPos) covers(want gtidPos) bool {
	for d, g := range want {
		if cur, ok := p[d]; !ok || cur.seq < g.seq {
			return false
		}
	}
	return true
}

// behind is how many transactions p lacks to reach want, over all
// domains of want.
func (p gtidPos) behind(want gtidPos) uint64 {
	var n uint64
	for d, g := range want {
		if cur := p[d]; cur.seq < g.seq {
			n += g.seq - cur.seq
		}
	}
	return n
}

// String formats p as MariaDB does, domains in order.
func (p gtidPos) String() string {
	ds := make([]uint32, 0, len(p))
	for d := range p {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteByte(',')
		}
		g := p[d]
		fmt.Fprintf(&b, "%d-%d-%d", g.domain, g.server, g.seq)
	}
	return b.String()
}
