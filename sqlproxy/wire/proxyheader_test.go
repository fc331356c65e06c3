package wire

import (
	"encoding/hex"
	"net"
	"testing"
)

// TestProxyHeader pins the bytes of each form (haproxy's
// proxy-protocol.txt 2.2); MariaDB's acceptance of them is
// sqlproxy's TestProxyProtocol*.
func TestProxyHeader(t *testing.T) {
	sig := "0d0a0d0a000d0a515549540a"
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"tcp4", ProxyHeaderIP(net.ParseIP("10.1.2.3"), 5555, net.ParseIP("127.0.0.1"), 3306),
			sig + "2111000c" + "0a010203" + "7f000001" + "15b3" + "0cea"},
		{"tcp4 no dst", ProxyHeaderIP(net.ParseIP("127.0.0.2").To4(), 0, nil, 0),
			sig + "2111000c" + "7f000002" + "00000000" + "0000" + "0000"},
		{"tcp4 to a v6 dst", ProxyHeaderIP(net.ParseIP("10.0.0.1"), 1, net.ParseIP("::1"), 2),
			sig + "2111000c" + "0a000001" + "00000000" + "0001" + "0002"},
		{"tcp6", ProxyHeaderIP(net.ParseIP("fd00::5"), 1, net.ParseIP("::1"), 3306),
			sig + "21210024" + "fd000000000000000000000000000005" + "00000000000000000000000000000001" + "0001" + "0cea"},
	} {
		if h := hex.EncodeToString(tc.got); h != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, h, tc.want)
		}
	}
	local := ProxyHeaderLocal()
	if len(local) != 16+216 || hex.EncodeToString(local[:16]) != sig+"213100d8" {
		t.Errorf("local: % x", local[:16])
	}
	for _, c := range local[16:] {
		if c != 0 {
			t.Fatalf("local: non-zero path byte")
		}
	}
	if h := hex.EncodeToString(ProxyHeaderIP(nil, 0, nil, 0)); h != hex.EncodeToString(local) {
		t.Errorf("nil src is not the local form")
	}
}
