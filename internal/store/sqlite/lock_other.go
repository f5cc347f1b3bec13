//go:build !unix

package sqlite

import "os"

// lockFile creates path but does not lock it: on systems without flock the
// rule "one process per database file" is the operator's to keep.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

func unlockFile(f *os.File) error { return f.Close() }
