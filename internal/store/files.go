package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Modes of the files Herald keeps in its data directory (--data): they
// hold delivery URLs with their passwords, secret header values, signing
// keys and the first admin key, so only their owner may read them, whatever
// the umask and whatever an earlier release or another program left.
const (
	PrivateDirMode  fs.FileMode = 0o700
	PrivateFileMode fs.FileMode = 0o600
)

// MakePrivate makes dir (and its missing parents) if it does not exist,
// then gives dir PrivateDirMode and each of files (names in dir) that
// exists PrivateFileMode. It is called at every start, before the files
// are used, so that a directory or a file made by an earlier release (or
// under a lax umask) is made private too.
func MakePrivate(dir string, files ...string) error {
	if err := os.MkdirAll(dir, PrivateDirMode); err != nil {
		return err
	}
	if err := os.Chmod(dir, PrivateDirMode); err != nil {
		return err
	}
	for _, name := range files {
		if err := os.Chmod(filepath.Join(dir, name), PrivateFileMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("make %s private: %w", name, err)
		}
	}
	return nil
}
