package connevict

import (
	"container/list"
	"iter"
	"net"
)

// BusiestHost is the host that occurs most often in hosts, the smallest
// on a tie (so the choice does not depend on map order); ok is false
// when hosts is empty.
func BusiestHost(hosts iter.Seq[string]) (host string, ok bool) {
	count := map[string]int{}
	for h := range hosts {
		count[h]++
	}
	most := 0
	for h, n := range count {
		if n > most || (n == most && h < host) {
			most, host = n, h
		}
	}
	return host, most > 0
}

// Oldest is the element of l, a list kept oldest first whose values are
// T, that gives up its slot: the first of the busiest host (host names
// a value's host). nil when l is empty.
func Oldest[T any](l *list.List, host func(T) string) *list.Element {
	busiest, ok := BusiestHost(func(yield func(string) bool) {
		for e := l.Front(); e != nil; e = e.Next() {
			if !yield(host(e.Value.(T))) {
				return
			}
		}
	})
	if !ok {
		return nil
	}
	for e := l.Front(); e != nil; e = e.Next() {
		if host(e.Value.(T)) == busiest {
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
	return h
}
