package auth

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"phxgo/sqlproxy/wire"
)

func ip(s string) Client { return Client{IP: net.ParseIP(s)} }

func TestHostMatches(t *testing.T) {
	unix := Client{}
	for _, tc := range []struct {
		host   string
		client Client
		want   bool
	}{
		{"%", ip("203.0.113.9"), true},
		{"", ip("10.1.1.1"), true},
		{"10.9.9.9", ip("10.9.9.9"), true},
		{"10.9.9.9", ip("127.0.0.1"), false},
		{"10.9.9.9", ip("::ffff:10.9.9.9"), true}, // IPv4-mapped is the IPv4 address
		{"10.0.%", ip("10.0.3.4"), true},
		{"10.0.%", ip("10.1.0.4"), false},
		{"10.0.%", ip("10.00.0.4"), false},
		{"10.0.0._", ip("10.0.0.7"), true},
		{"10.0.0._", ip("10.0.0.17"), false},
		{"10.0.0.0/255.255.255.0", ip("10.0.0.200"), true},
		{"10.0.0.0/255.255.255.0", ip("10.0.1.1"), false},
		{"10.0.0.0/255.255.255.0", ip("fe80::1"), false},
		{"10.0.0.0/255.255.0.0", ip("10.0.77.1"), true},
		{"localhost", ip("127.0.0.1"), true},
		{"localhost", ip("::1"), true},
		{"localhost", unix, true},
		{"localhost", Client{IP: net.ParseIP("127.0.0.1"), ByAddr: true}, false}, // MariaDB over TCP, skip-name-resolve
		{"127.0.0.1", Client{IP: net.ParseIP("127.0.0.1"), ByAddr: true}, true},
		{"LOCALHOST", ip("127.0.0.1"), true}, // host names compare case-insensitively
		{"localhost", ip("10.0.0.1"), false},
		{"local%", ip("127.0.0.1"), true},
		{"127.0.0.1", ip("127.0.0.1"), true},
		{"127.0.0.1", unix, false},
		{"::1", ip("::1"), true},
		{"app.example.com", ip("10.0.0.1"), false}, // names are never resolved
		{`10.0.0.\%`, ip("10.0.0.1"), false},
		{"%.9", ip("10.9.9.9"), true},
		{"%", unix, true},
	} {
		if got := parseHost(tc.host).matches(tc.client); got != tc.want {
			t.Errorf("%q matches %s: %v, want %v", tc.host, tc.client.Addr(), got, tc.want)
		}
	}
}

func TestHostSort(t *testing.T) {
	for host, want := range map[string]uint32{
		"10.9.9.9": 128, "localhost": 128, "10.0.0.0/255.255.255.0": 128,
		"10.0.%": 7, "1%": 3, "%": 1, "": 0, "_": 2, `a\%b`: 128,
	} {
		if got := hostSort(host); got != want {
			t.Errorf("hostSort(%q) = %d, want %d", host, got, want)
		}
	}
}

// TestMostSpecificRow: the client gets the first matching row in
// MariaDB's order, even when a less specific row would have matched too.
func TestMostSpecificRow(t *testing.T) {
	rows := func(hosts ...string) []row {
		var out []row
		for i, h := range hosts {
			out = append(out, row{host: parseHost(h), hash: []byte{byte(i)}})
		}
		sortRows(out)
		return out
	}
	for _, tc := range []struct {
		hosts  []string
		client Client
		want   string // "" for no match
	}{
		{[]string{"%", "10.9.9.9", "10.%"}, ip("10.9.9.9"), "10.9.9.9"},
		{[]string{"%", "10.9.%", "10.%"}, ip("10.9.9.9"), "10.9.%"},
		{[]string{"%", "10.%"}, ip("127.0.0.1"), "%"},
		{[]string{"10.9.9.9"}, ip("127.0.0.1"), ""},
		{[]string{"127.0.0.1", "localhost"}, ip("127.0.0.1"), "localhost"},
		{[]string{"%", "10.0.0.0/255.0.0.0"}, ip("10.2.3.4"), "10.0.0.0/255.0.0.0"},
		{[]string{"", "%"}, ip("10.2.3.4"), "%"},
	} {
		r, ok := match(rows(tc.hosts...), tc.client)
		got := ""
		if ok {
			got = r.host.text
		}
		if got != tc.want {
			t.Errorf("%q for %s: got %q, want %q", tc.hosts, tc.client.Addr(), got, tc.want)
		}
	}
}

func TestParseNativeRefuses(t *testing.T) {
	good := "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"
	for _, tc := range []struct {
		plugin, as string
		ok         bool
	}{
		{"mysql_native_password", good, true},
		{"", good, true},
		{"mysql_native_password", "", false}, // no password: refused
		{"mysql_native_password", "invalid", false},
		{"unix_socket", "", false},
		{"ed25519", "abc", false},
		{"mysql_native_password", "*ZZ70C0C06DEE42FD1618BB99005ADCA2EC9D1E19", false},
	} {
		if _, ok := parseNative(tc.plugin, tc.as); ok != tc.ok {
			t.Errorf("parseNative(%q, %q) ok=%v, want %v", tc.plugin, tc.as, ok, tc.ok)
		}
	}
}

// TestCacheBounded: a million distinct user names keep at most
// MaxEntries cached.
func TestCacheBounded(t *testing.T) {
	s := New(Config{MaxEntries: 100, Addrs: func() []string { return nil }})
	now := time.Now()
	s.mu.Lock()
	for i := range 100000 {
		s.put(fmt.Sprintf("stranger%d", i), &entry{fetched: now}, now)
	}
	s.mu.Unlock()
	if n := s.cached(); n > 100 {
		t.Fatalf("%d entries cached, bound 100", n)
	}
}

func FuzzWildMatch(f *testing.F) {
	f.Add("10.0.%", "10.0.1.2")
	f.Add(`a\%%_`, "a%bc")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 300 || len(s) > 300 {
			return
		}
		got := wildMatch(pattern, s, false)
		if pattern == "%" && !got {
			t.Fatal("'%' must match everything")
		}
		if got && hostSort(pattern) == 128 && pattern != s && !containsEscape(pattern) {
			t.Fatalf("pattern without wildcards %q matched %q", pattern, s)
		}
	})
}

func containsEscape(p string) bool {
	for i := range len(p) {
		if p[i] == '\\' {
			return true
		}
	}
	return false
}

// TestVerifyPicksRow: the token is checked against the row that applies
// to the client, and Account says whether a unix-socket login
// (user@localhost) would be that same account.
func TestVerifyPicksRow(t *testing.T) {
	stage1 := sha1.Sum([]byte("pw"))
	hash := sha1.Sum(stage1[:])
	other := sha1.Sum([]byte("other"))
	s := New(Config{Addrs: func() []string { return nil }})
	rows := []row{{host: parseHost("localhost"), hash: hash[:]}, {host: parseHost("%"), hash: hash[:]},
		{host: parseHost("10.9.%"), hash: other[:]}, {host: parseHost("10.8.0.1")}}
	sortRows(rows)
	s.cache["dave"] = &entry{rows: rows, fetched: time.Now()}
	salt := []byte("01234567890123456789")
	token := wire.ScrambleFromStage1(salt, stage1[:])
	ctx := context.Background()
	for _, tc := range []struct {
		client    Client
		host      string
		sameLocal bool
		err       error
	}{
		{ip("127.0.0.1"), "localhost", true, nil},
		{Client{}, "localhost", true, nil},
		{ip("10.0.0.5"), "%", false, nil},
		{ip("10.9.0.5"), "", false, ErrDenied},   // its row has another password
		{ip("10.8.0.1"), "", false, ErrUnusable}, // its row has no native hash
	} {
		acct, err := s.Verify(ctx, "dave", tc.client, salt, token)
		if !errors.Is(err, tc.err) || err == nil && (acct.Host != tc.host || acct.SameLocally != tc.sameLocal || !bytes.Equal(acct.Stage1, stage1[:])) {
			t.Errorf("%s: %+v %v", tc.client.Addr(), acct, err)
		}
	}
	if _, err := s.Verify(ctx, "dave", ip("10.0.0.5"), salt, nil); !errors.Is(err, ErrDenied) {
		t.Errorf("empty token: %v", err)
	}
}
