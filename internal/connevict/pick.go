package connevict

import (
	"container/list"
	"iter"
	"net"
)

// BusiestHosts are the hosts that occur most often in hosts (several on
// a tie); empty when hosts is.
func BusiestHosts(hosts iter.Seq[string]) map[string]bool {
	count := map[string]int{}
	for h := range hosts {
		count[h]++
	}
	most := 0
	for _, n := range count {
		most = max(most, n)
	}
	busiest := map[string]bool{}
	for h, n := range count {
		if n == most {
			busiest[h] = true
		}
	}
	return busiest
}

// Oldest is the element of l, a list kept oldest first whose values are
// T, that gives up its slot: the oldest of the busiest hosts' (host
// names a value's host). nil when l is empty.
//
// On a tie the oldest connection goes, whoever holds it: a flood from
// many addresses, one connection each, then evicts its own silent
// connections before a client's login in progress (younger than they).
// The tie once went to the smallest host name, which let a flood from
// addresses that sort after a client's evict it every time (red-team
// test, session 37).
func Oldest[T any](l *list.List, host func(T) string) *list.Element {
	busiest := BusiestHosts(func(yield func(string) bool) {
		for e := l.Front(); e != nil; e = e.Next() {
			if !yield(host(e.Value.(T))) {
				return
			}
		}
	})
	for e := l.Front(); e != nil; e = e.Next() {
		if busiest[host(e.Value.(T))] {
			return e
		}
	}
	return nil
}

// Host is the host part of a remote address: the whole address when it
// has no port, "" for none.
func Host(a net.Addr) string {
	if a == nil {
		return ""
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(h); ip != nil && ip.To4() == nil && !ip.IsLoopback() {
		// One IPv6 host holds a whole /64 (an ISP hands out at least
		// that): counted per address, a flood from one host would look
		// like many.
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return h
}
