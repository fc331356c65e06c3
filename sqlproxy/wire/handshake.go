package wire

import (
	"bytes"
	"encoding/binary"
)

// Greeting is the server's initial handshake (protocol 10).
type Greeting struct {
	Version   string
	ConnID    uint32
	Salt      []byte // 20 bytes
	Caps      uint32
	Charset   uint8
	Status    uint16
	Plugin    string
	ExtraCaps uint32 // MariaDB extended capabilities (when Caps lacks CLIENT_LONG_PASSWORD)
}

// Encode builds the greeting payload.
func (g *Greeting) Encode() []byte {
	b := []byte{10}
	b = append(b, g.Version...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, g.ConnID)
	b = append(b, g.Salt[:8]...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(g.Caps))
	b = append(b, g.Charset)
	b = binary.LittleEndian.AppendUint16(b, g.Status)
	b = binary.LittleEndian.AppendUint16(b, uint16(g.Caps>>16))
	b = append(b, byte(len(g.Salt)+1))
	b = append(b, make([]byte, 6)...)
	b = binary.LittleEndian.AppendUint32(b, g.ExtraCaps)
	b = append(b, g.Salt[8:]...)
	b = append(b, 0)
	b = append(b, g.Plugin...)
	return append(b, 0)
}

// ParseGreeting decodes a server greeting.
func ParseGreeting(p []byte) (*Greeting, error) {
	bad := &ErrMalformed{What: "greeting"}
	if len(p) < 1 || p[0] != 10 {
		return nil, bad
	}
	i := bytes.IndexByte(p[1:], 0)
	if i < 0 {
		return nil, bad
	}
	g := &Greeting{Version: string(p[1 : 1+i])}
	p = p[2+i:]
	if len(p) < 4+8+1+2+1+2+2+1+10 {
		return nil, bad
	}
	g.ConnID = binary.LittleEndian.Uint32(p)
	salt := append([]byte(nil), p[4:12]...)
	p = p[13:]
	g.Caps = uint32(u16(p))
	g.Charset = p[2]
	g.Status = u16(p[3:])
	g.Caps |= uint32(u16(p[5:])) << 16
	saltLen := int(p[7])
	g.ExtraCaps = binary.LittleEndian.Uint32(p[14:])
	p = p[18:]
	if g.Caps&ClientSecureConn != 0 {
		n := max(13, saltLen-8)
		if len(p) < n {
			return nil, bad
		}
		salt = append(salt, bytes.TrimRight(p[:n], "\x00")...)
		p = p[n:]
	}
	g.Salt = salt
	if g.Caps&ClientPluginAuth != 0 {
		if j := bytes.IndexByte(p, 0); j >= 0 {
			p = p[:j]
		}
		g.Plugin = string(p)
	}
	return g, nil
}

// MaxHandshakePacket bounds every packet a client sends before it is
// logged in (SSLRequest, HandshakeResponse41, auth switch answer). The
// fixed part, user (at most 80 characters of 4 bytes), token (255), database
// (64×4) and plugin name take well under 2 KiB; connection attributes
// are one length-encoded string that libmysqlclient and Connector/J cap
// at 64 KiB. 64 KiB + 4 KiB therefore admits every real client.
const MaxHandshakePacket = 68 << 10

// maxAttrs bounds the connection attributes ParseResponse keeps (a
// stranger's 64 KiB of tiny distinct keys would otherwise become a map of
// thousands of entries); later ones are skipped. The proxy's own
// attributes come first in its hop's response.
const maxAttrs = 64

// Response is the client's HandshakeResponse41.
type Response struct {
	Caps      uint32
	MaxPacket uint32
	Charset   uint8
	User      string
	Auth      []byte
	DB        string
	Plugin    string
	Attrs     map[string]string
}

// ParseResponse decodes a HandshakeResponse41. A short SSL request (32
// bytes) is reported as malformed: the proxy does not offer SSL.
func ParseResponse(p []byte) (*Response, error) {
	bad := &ErrMalformed{What: "handshake response"}
	if len(p) < 33 {
		return nil, bad
	}
	r := &Response{Caps: binary.LittleEndian.Uint32(p), MaxPacket: binary.LittleEndian.Uint32(p[4:]), Charset: p[8]}
	if r.Caps&ClientProtocol41 == 0 {
		return nil, bad
	}
	p = p[32:]
	i := bytes.IndexByte(p, 0)
	if i < 0 {
		return nil, bad
	}
	r.User, p = string(p[:i]), p[i+1:]
	switch {
	case r.Caps&ClientPluginAuthLenenc != 0:
		s, n, ok := ReadLenEncString(p)
		if !ok {
			return nil, bad
		}
		r.Auth, p = append([]byte(nil), s...), p[n:]
	case r.Caps&ClientSecureConn != 0:
		if len(p) < 1 || len(p) < 1+int(p[0]) {
			return nil, bad
		}
		r.Auth, p = append([]byte(nil), p[1:1+int(p[0])]...), p[1+int(p[0]):]
	default:
		j := bytes.IndexByte(p, 0)
		if j < 0 {
			return nil, bad
		}
		r.Auth, p = append([]byte(nil), p[:j]...), p[j+1:]
	}
	if r.Caps&ClientConnectWithDB != 0 && len(p) > 0 {
		j := bytes.IndexByte(p, 0)
		if j < 0 {
			j = len(p)
			r.DB, p = string(p), nil
		} else {
			r.DB, p = string(p[:j]), p[j+1:]
		}
	}
	if r.Caps&ClientPluginAuth != 0 && len(p) > 0 {
		j := bytes.IndexByte(p, 0)
		if j < 0 {
			r.Plugin, p = string(p), nil
		} else {
			r.Plugin, p = string(p[:j]), p[j+1:]
		}
	}
	if r.Caps&ClientConnectAttrs != 0 && len(p) > 0 {
		all, _, ok := ReadLenEncString(p)
		if !ok {
			return nil, bad
		}
		r.Attrs = map[string]string{}
		for len(all) > 0 {
			k, n, ok := ReadLenEncString(all)
			if !ok {
				return nil, bad
			}
			all = all[n:]
			v, n, ok := ReadLenEncString(all)
			if !ok {
				return nil, bad
			}
			all = all[n:]
			if len(r.Attrs) < maxAttrs {
				r.Attrs[string(k)] = string(v)
			}
		}
	}
	return r, nil
}

// Encode builds a HandshakeResponse41 payload. Attrs are sent only when
// Caps has CLIENT_CONNECT_ATTRS.
func (r *Response) Encode() []byte {
	b := binary.LittleEndian.AppendUint32(nil, r.Caps)
	b = binary.LittleEndian.AppendUint32(b, r.MaxPacket)
	b = append(b, r.Charset)
	b = append(b, make([]byte, 23)...)
	b = append(b, r.User...)
	b = append(b, 0)
	switch {
	case r.Caps&ClientPluginAuthLenenc != 0:
		b = AppendLenEncString(b, r.Auth)
	case r.Caps&ClientSecureConn != 0:
		b = append(b, byte(len(r.Auth)))
		b = append(b, r.Auth...)
	default: // pre-4.1 token: NUL-terminated
		b = append(b, r.Auth...)
		b = append(b, 0)
	}
	if r.Caps&ClientConnectWithDB != 0 {
		b = append(b, r.DB...)
		b = append(b, 0)
	}
	if r.Caps&ClientPluginAuth != 0 {
		b = append(b, r.Plugin...)
		b = append(b, 0)
	}
	if r.Caps&ClientConnectAttrs != 0 {
		var a []byte
		for k, v := range r.Attrs {
			a = AppendLenEncString(a, []byte(k))
			a = AppendLenEncString(a, []byte(v))
		}
		b = AppendLenEncString(b, a)
	}
	return b
}

// AuthSwitch builds an AuthSwitchRequest asking for mysql_native_password.
func AuthSwitch(salt []byte) []byte {
	b := []byte{HeaderEOF}
	b = append(b, NativePlugin...)
	b = append(b, 0)
	b = append(b, salt...)
	return append(b, 0)
}

// ParseAuthSwitch decodes an AuthSwitchRequest (0xfe plugin\0 data).
func ParseAuthSwitch(p []byte) (plugin string, data []byte, ok bool) {
	if len(p) < 2 || p[0] != HeaderEOF {
		return "", nil, false
	}
	i := bytes.IndexByte(p[1:], 0)
	if i < 0 {
		return string(p[1:]), nil, true
	}
	return string(p[1 : 1+i]), bytes.TrimRight(p[2+i:], "\x00"), true
}
