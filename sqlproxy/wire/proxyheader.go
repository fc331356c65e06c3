package wire

import (
	"encoding/binary"
	"net"
)

// PROXY protocol version 2 (haproxy's proxy-protocol.txt, section 2.2):
// a binary header a connection opens with, before any MySQL packet, that
// tells the server where the client really connects from. MariaDB reads
// it in front of the client's first packet (the handshake response or the
// SSLRequest) from the networks of its proxy_protocol_networks and then
// matches accounts by the header's source; from any other address it
// answers ERR 1130 "Proxy header is not accepted from ..." and closes.
//
//	signature (12) | ver_cmd (1) | fam (1) | len (2, big endian) | addresses (len)
//
// Only what the proxy sends is encoded: PROXY over TCP4 or TCP6 with the
// client's address as source, and the AF_UNIX form, which MariaDB takes
// for a local client ('localhost', as a login by its unix socket).

// proxySig is the v2 signature.
var proxySig = [12]byte{0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A}

const (
	proxyV2Proxy = 0x21 // version 2, command PROXY
	proxyTCP4    = 0x11 // AF_INET, STREAM
	proxyTCP6    = 0x21 // AF_INET6, STREAM
	proxyUnix    = 0x31 // AF_UNIX, STREAM
	proxyUnixLen = 216  // two sun_path fields of 108 bytes
)

// ProxyHeaderIP is the v2 header of a client at src (port srcPort; 0 when
// unknown) reaching dst:dstPort; an IPv4 address in IPv6 form is sent as
// TCP4 (MariaDB normalizes it so too). dst may be nil: the unspecified
// address of src's family is sent. A nil src is a local client
// (ProxyHeaderLocal).
func ProxyHeaderIP(src net.IP, srcPort int, dst net.IP, dstPort int) []byte {
	if src == nil {
		return ProxyHeaderLocal()
	}
	var b []byte
	if s4 := src.To4(); s4 != nil {
		d4 := dst.To4()
		if d4 == nil {
			d4 = net.IPv4zero.To4()
		}
		b = proxyStart(proxyTCP4, 12)
		b = append(append(b, s4...), d4...)
	} else {
		d16 := dst.To16()
		if d16 == nil || dst.To4() != nil {
			d16 = net.IPv6unspecified
		}
		b = proxyStart(proxyTCP6, 36)
		b = append(append(b, src.To16()...), d16...)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(srcPort))
	return binary.BigEndian.AppendUint16(b, uint16(dstPort))
}

// ProxyHeaderLocal is the v2 header of a local client (AF_UNIX, empty
// paths): MariaDB judges the login as from 'localhost' and matches no
// address row, exactly as a login by its unix socket.
func ProxyHeaderLocal() []byte {
	b := proxyStart(proxyUnix, proxyUnixLen)
	return append(b, make([]byte, proxyUnixLen)...)
}

func proxyStart(fam byte, n int) []byte {
	b := make([]byte, 0, 16+n)
	b = append(b, proxySig[:]...)
	b = append(b, proxyV2Proxy, fam)
	return binary.BigEndian.AppendUint16(b, uint16(n))
}
