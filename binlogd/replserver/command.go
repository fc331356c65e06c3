package replserver

import (
	"encoding/binary"
	"fmt"
)

// Client command codes the endpoint understands (MySQL protocol).
const (
	comQuit          = 0x01
	comInitDB        = 0x02
	comQuery         = 0x03
	comPing          = 0x0e
	comBinlogDump    = 0x12
	comRegisterSlave = 0x15
)

// binlogDumpNonBlock asks the master to answer EOF instead of waiting once
// the replica has caught up (mariadb-binlog --stop-never unset).
const (
	binlogDumpNonBlock         = 0x01
	binlogSendAnnotateRowsEvts = 0x02
)

// command is one decoded client packet.
type command struct {
	code     byte
	query    string        // comQuery, comInitDB
	register registerSlave // comRegisterSlave
	dump     binlogDump    // comBinlogDump
}

// registerSlave is COM_REGISTER_SLAVE: what a replica says about itself.
type registerSlave struct {
	serverID uint32
	host     string
	user     string
	port     uint16
}

// binlogDump is COM_BINLOG_DUMP. In GTID mode the file and position are
// ignored: the replica's position is @slave_connect_state.
type binlogDump struct {
	pos      uint32
	flags    uint16
	serverID uint32
	file     string
}

// decodeCommand decodes one command packet (payload, without the 4-byte
// header). It never panics; bytes it cannot decode give ErrBadPacket.
func decodeCommand(p []byte) (command, error) {
	if len(p) == 0 {
		return command{}, fmt.Errorf("%w: empty command packet", ErrBadPacket)
	}
	c := command{code: p[0]}
	body := p[1:]
	switch c.code {
	case comQuit, comPing:
	case comQuery, comInitDB:
		c.query = string(body)
	case comRegisterSlave:
		r, err := decodeRegisterSlave(body)
		if err != nil {
			return command{}, err
		}
		c.register = r
	case comBinlogDump:
		if len(body) < 10 {
			return command{}, fmt.Errorf("%w: COM_BINLOG_DUMP of %d bytes", ErrBadPacket, len(body))
		}
		c.dump = binlogDump{
			pos:      binary.LittleEndian.Uint32(body),
			flags:    binary.LittleEndian.Uint16(body[4:]),
			serverID: binary.LittleEndian.Uint32(body[6:]),
			file:     string(body[10:]),
		}
	}
	return c, nil
}

func decodeRegisterSlave(b []byte) (registerSlave, error) {
	var r registerSlave
	bad := func(what string) (registerSlave, error) {
		return registerSlave{}, fmt.Errorf("%w: COM_REGISTER_SLAVE: truncated at %s", ErrBadPacket, what)
	}
	if len(b) < 4 {
		return bad("server_id")
	}
	r.serverID = binary.LittleEndian.Uint32(b)
	b = b[4:]
	var strs [3]string
	for i, what := range []string{"host", "user", "password"} {
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return bad(what)
		}
		strs[i] = string(b[1 : 1+int(b[0])])
		b = b[1+int(b[0]):]
	}
	r.host, r.user = strs[0], strs[1]
	if len(b) < 2 {
		return bad("port")
	}
	r.port = binary.LittleEndian.Uint16(b)
	// rank (4) and master_id (4) follow; replicas send them, nothing uses them.
	return r, nil
}
