package auth

import (
	"net"
	"net/netip"
	"sort"
	"strings"
)

// Host matching: which mysql.user row of a user applies to a client, as
// MariaDB decides it (sql_acl.cc: compare_hostname, get_sort,
// acl_user_compare), for the host forms accounts use:
//
//	'%' or ''            any client
//	'10.0.0.7'           that address (textual compare)
//	'10.0.%', '10.0.0._' wildcards over the address text ('\' escapes)
//	'10.0.0.0/255.255.255.0'  IPv4 address and netmask
//	'localhost'          a local client only (loopback or unix socket)
//
// A pattern is compared with the client's address text (case-sensitive)
// and with its host name, case-insensitively. Like a MariaDB with
// skip-name-resolve (phxgo's), the proxy resolves no names: the only
// host name a client has is "localhost", when it is local. Rows are
// tried most specific first: a host without wildcards, then patterns by
// how late their first wildcard comes, '%' last; the first match is the
// account (even if its password then fails, as in MariaDB).

// Client is where a client connects from: its real address as the proxy
// sees it, or as a verified forwarding hop reports it.
type Client struct {
	IP net.IP // nil: not an IP peer (unix socket), which is local
	// ByAddr: judge the client by its address alone, as MariaDB (with
	// skip-name-resolve) judges a TCP login: a loopback address then
	// does not match 'localhost'. For the proxy's own address in
	// Store.AccountFor; clients of the proxy leave it false.
	ByAddr bool
}

// ClientFromAddr returns the Client for a connection's remote address.
func ClientFromAddr(a net.Addr) Client {
	if ta, ok := a.(*net.TCPAddr); ok {
		return Client{IP: ta.IP}
	}
	return Client{}
}

// Local reports whether the client is on this host ('localhost').
func (c Client) Local() bool { return c.IP == nil || !c.ByAddr && c.IP.IsLoopback() }

// NetipAddr is c's IP as a netip.Addr (IPv4 unmapped); the zero Addr
// for a non-IP peer.
func (c Client) NetipAddr() netip.Addr {
	a, _ := netip.AddrFromSlice(c.IP)
	return a.Unmap()
}

// Addr is the address text host patterns are compared with (IPv4
// without the IPv6-mapped prefix, as MariaDB normalizes it); "localhost"
// for a non-IP peer.
func (c Client) Addr() string {
	if c.IP == nil {
		return "localhost"
	}
	if v4 := c.IP.To4(); v4 != nil {
		return v4.String()
	}
	return c.IP.String()
}

// hostPattern is the Host column of one mysql.user row, parsed.
type hostPattern struct {
	text     string
	ip, mask net.IP // netmask form, IPv4 only (MariaDB's too)
	sort     uint32 // higher is more specific (MariaDB's get_sort)
}

func parseHost(h string) hostPattern {
	p := hostPattern{text: h, sort: hostSort(h)}
	if i := strings.IndexByte(h, '/'); i > 0 {
		ip, mask := net.ParseIP(h[:i]).To4(), net.ParseIP(h[i+1:]).To4()
		if ip != nil && mask != nil {
			p.ip, p.mask = ip, mask
		}
	}
	return p
}

// hostSort is MariaDB's get_sort for one string: 128 for a host without
// wildcards, the first wildcard's position + 1 (at most 127) for a
// pattern, 1 for '%' alone, 0 for the empty host.
func hostSort(h string) uint32 {
	chars := uint32(0)
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c == '\\' && i+1 < len(h):
			i++
		case c == '%' || c == '_':
			pos := uint32(i) + 1
			if !(pos == 1 && c == '%' && i+1 == len(h)) {
				pos++
			}
			return min(pos, 127)
		}
		chars = 128
	}
	return chars
}

// matches reports whether a client may use the row.
func (p hostPattern) matches(c Client) bool {
	if p.text == "" || p.text == "%" {
		return true
	}
	if p.ip != nil {
		v4 := c.IP.To4()
		if v4 == nil {
			return false
		}
		for i := range 4 {
			if v4[i]&p.mask[i] != p.ip[i] {
				return false
			}
		}
		return true
	}
	if c.Local() && wildMatch(p.text, "localhost", true) {
		return true
	}
	return c.IP != nil && wildMatch(p.text, c.Addr(), false)
}

// wildMatch is MariaDB's wild_compare: '%' any run, '_' one character,
// '\' escapes the next; fold compares ASCII case-insensitively.
// Backtracking to the last '%' only keeps it linear in practice and at
// most len(pattern)×len(s).
func wildMatch(pattern, s string, fold bool) bool {
	eq := func(a, b byte) bool {
		if fold {
			return lower(a) == lower(b)
		}
		return a == b
	}
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(pattern) {
			c := pattern[pi]
			switch {
			case c == '%':
				starP, starS = pi, si
				pi++
				continue
			case c == '_':
				pi++
				si++
				continue
			case c == '\\' && pi+1 < len(pattern):
				if eq(pattern[pi+1], s[si]) {
					pi += 2
					si++
					continue
				}
			default:
				if eq(c, s[si]) {
					pi++
					si++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		pi, si = starP+1, starS
	}
	for pi < len(pattern) && pattern[pi] == '%' {
		pi++
	}
	return pi == len(pattern)
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// sortRows orders a user's rows as MariaDB tries them: most specific
// host first; among equals the greater host text first (which puts
// 'localhost' before '127.0.0.1', as MariaDB does).
func sortRows(rows []row) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i].host, rows[j].host
		if a.sort != b.sort {
			return a.sort > b.sort
		}
		return a.text > b.text
	})
}

// match returns the row that applies to c (rows sorted by sortRows).
func match(rows []row, c Client) (row, bool) {
	for _, r := range rows {
		if r.host.matches(c) {
			return r, true
		}
	}
	return row{}, false
}
