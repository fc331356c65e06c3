package masterlease

import (
	"fmt"

	pb "phxgo/proto"
)

// GTID is a MariaDB global transaction id domain-server-seq; the zero value
// means "none yet". It has the same fields as binlogd/binlog.GTID, so the
// two convert directly: binlog.GTID(g).
type GTID struct {
	Domain uint32
	Server uint32
	Seq    uint64
}

// IsZero reports whether g is "none".
func (g GTID) IsZero() bool { return g == GTID{} }

// String is "domain-server-seq", or "" for the zero GTID.
func (g GTID) String() string {
	if g.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d-%d-%d", g.Domain, g.Server, g.Seq)
}

// show is String with "none" for the zero GTID (for error details).
func (g GTID) show() string {
	if g.IsZero() {
		return "none"
	}
	return g.String()
}

func gtidFromPB(p *pb.Gtid) GTID {
	if p == nil {
		return GTID{}
	}
	return GTID{Domain: p.GetDomain(), Server: p.GetServerId(), Seq: p.GetSeq()}
}

func (g GTID) toPB() *pb.Gtid {
	if g.IsZero() {
		return nil
	}
	return &pb.Gtid{Domain: g.Domain, ServerId: g.Server, Seq: g.Seq}
}
