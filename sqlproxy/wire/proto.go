package wire

import (
	"encoding/binary"
	"errors"
)

// Commands (first byte of a client packet).
const (
	ComQuit            = 0x01
	ComInitDB          = 0x02
	ComQuery           = 0x03
	ComFieldList       = 0x04
	ComStatistics      = 0x09
	ComProcessKill     = 0x0c
	ComPing            = 0x0e
	ComChangeUser      = 0x11
	ComStmtPrepare     = 0x16
	ComStmtExecute     = 0x17
	ComStmtSendLong    = 0x18
	ComStmtClose       = 0x19
	ComStmtReset       = 0x1a
	ComSetOption       = 0x1b
	ComStmtFetch       = 0x1c
	ComResetConnection = 0x1f
)

// Capability flags.
const (
	ClientLongPassword     = 1 << 0
	ClientFoundRows        = 1 << 1
	ClientLongFlag         = 1 << 2
	ClientConnectWithDB    = 1 << 3
	ClientNoSchema         = 1 << 4
	ClientCompress         = 1 << 5
	ClientODBC             = 1 << 6
	ClientLocalFiles       = 1 << 7
	ClientIgnoreSpace      = 1 << 8
	ClientProtocol41       = 1 << 9
	ClientInteractive      = 1 << 10
	ClientSSL              = 1 << 11
	ClientIgnoreSigpipe    = 1 << 12
	ClientTransactions     = 1 << 13
	ClientSecureConn       = 1 << 15
	ClientMultiStatements  = 1 << 16
	ClientMultiResults     = 1 << 17
	ClientPSMultiResults   = 1 << 18
	ClientPluginAuth       = 1 << 19
	ClientConnectAttrs     = 1 << 20
	ClientPluginAuthLenenc = 1 << 21
	ClientSessionTrack     = 1 << 23
	ClientDeprecateEOF     = 1 << 24
)

// ServerCaps is what the proxy offers clients. Compression, SSL and
// session tracking are not offered; DEPRECATE_EOF is relayed as negotiated.
const ServerCaps = ClientLongPassword | ClientFoundRows | ClientLongFlag | ClientConnectWithDB |
	ClientNoSchema | ClientODBC | ClientLocalFiles | ClientIgnoreSpace | ClientProtocol41 |
	ClientInteractive | ClientIgnoreSigpipe | ClientTransactions | ClientSecureConn |
	ClientMultiStatements | ClientMultiResults | ClientPSMultiResults | ClientPluginAuth |
	ClientConnectAttrs | ClientPluginAuthLenenc | ClientDeprecateEOF

// Server status flags.
const (
	StatusInTrans         = 0x0001
	StatusAutocommit      = 0x0002
	StatusMoreResults     = 0x0008
	StatusCursorExists    = 0x0040
	StatusNoBackslashEsc  = 0x0200 // sql_mode has NO_BACKSLASH_ESCAPES
	StatusInTransReadonly = 0x2000
)

// Packet headers.
const (
	HeaderOK    = 0x00
	HeaderEOF   = 0xfe
	HeaderErr   = 0xff
	HeaderLocal = 0xfb
)

// ErrShort reports a truncated packet.
var ErrShort = errors.New("wire: packet too short")

// ReadLenEnc decodes a length-encoded integer; ok is false for a NULL
// (0xfb) or truncated input.
func ReadLenEnc(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfb:
		return 0, 1, false
	case 0xfc:
		if len(b) < 3 {
			return 0, 0, false
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3, true
	case 0xfd:
		if len(b) < 4 {
			return 0, 0, false
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, true
	case 0xfe:
		if len(b) < 9 {
			return 0, 0, false
		}
		return binary.LittleEndian.Uint64(b[1:]), 9, true
	}
	return uint64(b[0]), 1, true
}

// AppendLenEnc appends v as a length-encoded integer.
func AppendLenEnc(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	b = append(b, 0xfe)
	return binary.LittleEndian.AppendUint64(b, v)
}

// ReadLenEncString decodes a length-encoded string.
func ReadLenEncString(b []byte) ([]byte, int, bool) {
	v, n, ok := ReadLenEnc(b)
	if !ok || uint64(len(b)-n) < v {
		return nil, 0, false
	}
	return b[n : n+int(v)], n + int(v), true
}

// AppendLenEncString appends s as a length-encoded string.
func AppendLenEncString(b []byte, s []byte) []byte {
	return append(AppendLenEnc(b, uint64(len(s))), s...)
}

// OK builds an OK packet payload (CLIENT_PROTOCOL_41 layout).
func OK(affected, insertID uint64, status uint16) []byte {
	b := []byte{HeaderOK}
	b = AppendLenEnc(b, affected)
	b = AppendLenEnc(b, insertID)
	return append(b, byte(status), byte(status>>8), 0, 0)
}

// EOF builds a classic EOF packet payload (0xfe, warnings, status): the
// terminator of column definitions and rows when CLIENT_DEPRECATE_EOF
// was not negotiated.
func EOF(warnings, status uint16) []byte {
	return []byte{HeaderEOF, byte(warnings), byte(warnings >> 8), byte(status), byte(status >> 8)}
}

// StatusOf returns the server status flags of an OK, or EOF payload
// (0xfe, length < 9, or an OK-with-0xfe under DEPRECATE_EOF).
func StatusOf(p []byte) (uint16, bool) {
	if len(p) == 0 {
		return 0, false
	}
	if p[0] == HeaderEOF && len(p) == 5 { // classic EOF: fe warnings(2) status(2)
		return u16(p[3:]), true
	}
	if p[0] != HeaderOK && p[0] != HeaderEOF {
		return 0, false
	}
	_, n1, ok := ReadLenEnc(p[1:])
	if !ok {
		return 0, false
	}
	_, n2, ok := ReadLenEnc(p[1+n1:])
	if !ok {
		return 0, false
	}
	i := 1 + n1 + n2
	if len(p) < i+2 {
		return 0, false
	}
	return u16(p[i:]), true
}
