package wire

import "encoding/binary"

// SSLRequestLen is the length of the SSLRequest payload: the first 32
// bytes of a HandshakeResponse41 with CLIENT_SSL set, sent in the clear
// before the client starts TLS on the same connection.
const SSLRequestLen = 32

// IsSSLRequest reports whether p, the client's first packet, asks to
// switch to TLS.
func IsSSLRequest(p []byte) bool {
	return len(p) == SSLRequestLen && binary.LittleEndian.Uint32(p)&ClientSSL != 0
}

// SSLRequest encodes an SSLRequest with caps (CLIENT_SSL is added).
func SSLRequest(caps, maxPacket uint32, charset uint8) []byte {
	b := binary.LittleEndian.AppendUint32(nil, caps|ClientSSL)
	b = binary.LittleEndian.AppendUint32(b, maxPacket)
	b = append(b, charset)
	return append(b, make([]byte, 23)...)
}

// PreHandshakeError is an ERR payload sent instead of the greeting (the
// client's capabilities are not known yet, so it carries no SQLSTATE, as
// MariaDB's own "Host ... is not allowed to connect").
func PreHandshakeError(code uint16, msg string) []byte {
	return append([]byte{HeaderErr, byte(code), byte(code >> 8)}, msg...)
}
