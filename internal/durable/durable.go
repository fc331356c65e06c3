// Package durable holds what makes a change to a directory survive a
// crash: a file created, renamed or removed is durable only once its
// directory is synced too.
package durable

import "os"

// SyncDir fsyncs the directory dir, making the names created, renamed or
// removed in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
