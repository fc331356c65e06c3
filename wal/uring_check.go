package wal

// CheckIOURing reports whether a Log opened now (without PlainSync)
// could flush through io_uring: nil if it could, else why it would use
// the fdatasync system call instead (binlogd check).
func CheckIOURing() error {
	u, err := newURing()
	if err != nil {
		return err
	}
	u.close()
	return nil
}
