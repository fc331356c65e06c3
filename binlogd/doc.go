// Package binlogd is part of phxgo (see README.md).
package binlogd
