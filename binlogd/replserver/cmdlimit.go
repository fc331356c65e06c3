package replserver

import "fmt"

// After login go-mysql reads the commands, and its reader still takes a
// packet's announced length at its word and follows continuation
// packets with no limit: four logged-in outside-replica connections that
// each streamed 256 MiB of one COM_QUERY took binlogd from 38 MB to 3.8
// GB (red-team test, session 37). So the guard keeps reading every
// command's header on its way to go-mysql and ends the connection at one
// over maxCommandPacket. A replica's commands are a few short queries
// (SET @slave_connect_state lists a GTID per replication domain),
// COM_REGISTER_SLAVE and COM_BINLOG_DUMP: well under 1 KiB. The limit
// also rules out continuation packets (16 MiB - 1 announced).
const maxCommandPacket = 256 << 10

// commandFrames follows the packets a logged-in client sends.
type commandFrames struct {
	frames packetFrames
	// over is the length a header announced past maxCommandPacket (0:
	// none yet).
	over int
}

// errCommandTooBig ends a connection whose client announced a command
// packet over maxCommandPacket.
type errCommandTooBig struct{ announced int }

func (e errCommandTooBig) Error() string {
	return fmt.Sprintf("command packet of %d bytes announced, at most %d after login", e.announced, maxCommandPacket)
}

// check follows p, the next bytes of the stream, and fails at a header
// that announces more than maxCommandPacket (before go-mysql, which
// reads through the guard, has the whole header).
func (f *commandFrames) check(p []byte) error {
	return f.frames.walk(p, func(_, length int) error {
		if length > maxCommandPacket {
			f.over = length
			return errCommandTooBig{length}
		}
		return nil
	})
}
