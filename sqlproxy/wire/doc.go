// Package wire is phxgo's one implementation of the MySQL/MariaDB
// client-server protocol: the proxy, binlogd's replication endpoint
// (replserver) and binlog capture all frame packets with it.
//
//	frame.go   framing: WritePacket/AppendPacket split a payload into
//	           frames of at most MaxPayload bytes (a payload of exactly
//	           MaxPayload ends with an empty frame); Reader joins them
//	packet.go  Conn: a net.Conn with buffers, sequence numbers and the
//	           proxy's read paths (ReadPacketReuse, RelayFrame)
//	errors.go  ERR packets (Error, ParseError); proto.go OK, EOF, status
//	           NewConnRaw reads and writes a socket through rawnet.Conn
//	           (RawSyscall, waiting in the netpoller: no P hand-off);
//	           Conn.WriteRequest sends a request and waits for its
//	           answer in one poll (no empty read before the answer)
//	accept.go  Acceptor: the accept loop with a connection cap
//	handshake.go, scramble.go, ssl.go  both sides of the handshake
//	relay.go, row.go, exec.go  what the proxy decodes of responses
//
// Sequence numbers are written in order and wrap at 255, but never
// checked on read: MariaDB resets them on a semi-sync binlog dump after
// each event that asks for an ACK, so capture could not use a checking
// reader. Compression (CLIENT_COMPRESS) is not implemented: no side
// negotiates it (the proxy does not offer it, replication runs over
// loopback or a local socket), and the relay copies frames raw, which
// compression would turn into decompress-and-recompress on every hop.
// The handshake and command phase of replserver and capture still run
// on go-mysql; only their binlog streams use this package.
//
// The relay decodes only what tells where a response ends: the first
// byte of each frame, column counts, and the status flags of OK/EOF
// terminators (SERVER_MORE_RESULTS_EXISTS, IN_TRANS, AUTOCOMMIT,
// CURSOR_EXISTS). Rows are never parsed; a frame that fits the 64 KiB
// read buffer is copied buffer to buffer, a larger one streamed.
//
// Reads are bounded: Conn.Limit and Reader.Limit cap a logical packet
// (ErrTooBig, which the proxy answers with 1153), and a payload buffer
// grows with the bytes that arrive, never with the length a header
// announces (readGrow).
//
// Invariant: both sides of a relay negotiated the same
// CLIENT_DEPRECATE_EOF, so terminators look the same on both.
package wire
