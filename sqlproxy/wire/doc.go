// Package wire is the MySQL/MariaDB client-server protocol as the proxy
// needs it: packet framing, the handshake on both sides, OK/ERR/EOF, the
// mysql_native_password scramble, and a relay that copies a complete
// response from a backend to a client as raw frames.
//
// The relay decodes only what tells where a response ends: the first
// byte of each frame, column counts, and the status flags of OK/EOF
// terminators (SERVER_MORE_RESULTS_EXISTS, IN_TRANS, AUTOCOMMIT,
// CURSOR_EXISTS). Rows are never parsed; a frame that fits the 64 KiB
// read buffer is copied buffer to buffer, a larger one streamed.
//
// Reads are bounded: Conn.Limit caps a logical packet (ErrTooBig, which
// the proxy answers with 1153), and a payload buffer grows with the bytes
// that arrive, never with the length a header announces (readGrow).
//
// Invariant: both sides of a relay negotiated the same
// CLIENT_DEPRECATE_EOF, so terminators look the same on both.
package wire
