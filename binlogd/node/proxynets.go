package node

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/config"
	"phxgo/binlogd/preflight"
)

// MariaDB's proxy_protocol_networks: who may send it a PROXY header.
//
// sqlproxy opens every TCP connection to a MariaDB for a client with a
// PROXY header naming the client (sqlproxy/proxyproto.go), so MariaDB
// applies the client's own mysql.user row, not the proxy's. MariaDB takes
// the header only from the networks in proxy_protocol_networks; whoever
// connects from one may claim any client address, so the list is the
// smallest that works: the addresses of the members that run a proxy
// (every member but witnesses: grpc_addr, mysql_addr and proxy_addr hosts,
// host names resolved), which is where the proxies dial from (sqlproxy's
// -source-ip defaults to its listen host). Not 'localhost': the proxy
// sends no header over the unix socket (there MariaDB keeps matching
// 'localhost' rows whatever the header says), and a local user of the
// socket could otherwise claim addresses.
//
// binlogd sets it with SET GLOBAL (it is dynamic), not in my.cnf: the
// members come from the Paxos log and change at run time. It is set as
// soon as MariaDB is up (startMySQL kicks the loop) and again on every
// member change and MariaDB restart; until then a proxy's header is
// refused, and the proxy logs in without it only when MariaDB would then
// apply the client's row anyway. A value the operator put in mysql_extra
// is kept: binlogd adds the members' addresses to it (logged once), never
// drops the operator's entries. A MariaDB without the variable (before
// 10.3) is logged once and left alone.

const (
	// proxyNetsEvery: how often the value in force is compared with the
	// wanted one (a cheap SELECT); the members' host names are resolved
	// again when the membership changes or every proxyNetsResolveEvery.
	proxyNetsEvery        = 2 * time.Second
	proxyNetsResolveEvery = time.Minute
	proxyNetsVar          = "proxy_protocol_networks"
	erUnknownSystemVar    = 1193
)

// proxyNetworks is the value to set: the operator's entries (mysql_extra),
// then the members' addresses not among them, in order.
func proxyNetworks(operator []string, ips []netip.Addr) string {
	out := slices.Clone(operator)
	for _, ip := range ips {
		if s := ip.String(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, ",")
}

// splitNetworks parses a proxy_protocol_networks value into its entries.
func splitNetworks(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// sameNetworks compares two values as sets of entries.
func sameNetworks(a, b string) bool {
	x, y := splitNetworks(a), splitNetworks(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// proxyMembers are the members that may run a proxy (not witnesses).
func proxyMembers(ms []config.Member) []config.Member {
	return slices.DeleteFunc(slices.Clone(ms), func(m config.Member) bool { return m.Witness })
}

// proxyNetsLoop keeps proxy_protocol_networks at the wanted value while
// binlogd runs (a running MariaDB; kicked by startMySQL).
func (n *Node) proxyNetsLoop(ctx context.Context) {
	operator, hasOperator := preflight.ExtraSetting(n.cfg.MySQLExtra, proxyNetsVar)
	opEntries := splitNetworks(operator)
	if hasOperator {
		n.log.Warn("mysql_extra sets proxy_protocol_networks: binlogd adds the members' addresses to its entries at run time (every address listed may name any client address to MariaDB)",
			"mysql_extra", operator)
	}
	version := func() [2]uint64 {
		m, _ := n.px.Membership()
		return [2]uint64{m.Index, uint64(len(m.Members))}
	}
	var (
		want       string
		at         [2]uint64
		resolvedAt time.Time
		warned     bool // unsupported or failing, logged once until it works
	)
	t := time.NewTicker(proxyNetsEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.proxyNetsKick:
		case <-t.C:
		}
		if v := version(); want == "" || v != at || time.Since(resolvedAt) > proxyNetsResolveEvery {
			lctx, cancel := context.WithTimeout(ctx, peerIPsLookupTimeout)
			ips, err := memberIPs(lctx, proxyMembers(n.members()), lookupHost)
			cancel()
			if err != nil {
				n.log.Warn("proxy_protocol_networks: a member's host name did not resolve; its proxy's PROXY headers are refused until it does", "err", err)
			}
			want, at, resolvedAt = proxyNetworks(opEntries, ips), v, time.Now()
		}
		n.dbMu.Lock()
		db := n.db
		n.dbMu.Unlock()
		if db == nil || want == "" {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		changed, err := setProxyNetworks(sctx, db, want)
		cancel()
		switch {
		case err != nil && !warned:
			warned = true
			var me *mysql.MySQLError
			if errors.As(err, &me) && me.Number == erUnknownSystemVar {
				n.log.Warn("this MariaDB has no proxy_protocol_networks (before 10.3): proxies' PROXY headers are refused, and a proxy logs a client in only when MariaDB would apply the client's own account to the proxy's address", "err", err)
			} else {
				n.log.Warn("proxy_protocol_networks not set", "err", err)
			}
		case err == nil:
			warned = false
			if changed {
				n.log.Info("proxy_protocol_networks set: these addresses may send MariaDB a PROXY header", "value", want)
			}
		}
	}
}

// kickProxyNets asks proxyNetsLoop to apply the value now (MariaDB is up).
func (n *Node) kickProxyNets() {
	select {
	case n.proxyNetsKick <- struct{}{}:
	default:
	}
}

// setProxyNetworks sets the variable to want unless it holds the same
// entries already; changed says whether it set it.
func setProxyNetworks(ctx context.Context, db *sql.DB, want string) (bool, error) {
	var cur string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL."+proxyNetsVar).Scan(&cur); err != nil {
		return false, err
	}
	if sameNetworks(cur, want) {
		return false, nil
	}
	if strings.ContainsAny(want, `'\`) {
		return false, fmt.Errorf("%s: refusing to set %q", proxyNetsVar, want)
	}
	_, err := db.ExecContext(ctx, "SET GLOBAL "+proxyNetsVar+"='"+want+"'")
	return err == nil, err
}
