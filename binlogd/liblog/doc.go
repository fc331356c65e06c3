// Package liblog sends the output of the libraries phxgo links to
// through the process's slog logger, so an operator reading binlogd's
// JSON log (or sqlproxy's) finds one stream in one format: without it,
// go-sql-driver/mysql prints plain "[mysql] ..." lines and gRPC prints
// its own format in the middle of the JSON.
//
// Install replaces process-wide loggers (the driver's and gRPC's are
// globals), so only mains call it, once, before starting work. Library
// messages are tagged lib=mysql or lib=grpc. gRPC's INFO chatter
// (connection state changes, many per peer reconnect) is logged at
// Debug; its warnings and errors keep their level.
package liblog
