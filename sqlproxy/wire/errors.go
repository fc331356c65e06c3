package wire

import "fmt"

// Error is a MySQL ERR packet: the wire form of a server (or proxy) error.
// It passes through the proxy unchanged, code and SQLSTATE included.
type Error struct {
	Code     uint16
	SQLState string // 5 characters
	Message  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("Error %d (%s): %s", e.Code, e.SQLState, e.Message)
}

// Packet encodes e as an ERR payload.
func (e *Error) Packet() []byte {
	state := e.SQLState
	if len(state) != 5 {
		state = "HY000"
	}
	b := []byte{HeaderErr, byte(e.Code), byte(e.Code >> 8), '#'}
	b = append(b, state...)
	return append(b, e.Message...)
}

// ParseError decodes an ERR payload.
func ParseError(p []byte) *Error {
	if len(p) < 3 || p[0] != HeaderErr {
		return &Error{Code: 2027, SQLState: "HY000", Message: "malformed error packet"}
	}
	e := &Error{Code: u16(p[1:]), SQLState: "HY000"}
	rest := p[3:]
	if len(rest) >= 6 && rest[0] == '#' {
		e.SQLState, rest = string(rest[1:6]), rest[6:]
	}
	e.Message = string(rest)
	return e
}
