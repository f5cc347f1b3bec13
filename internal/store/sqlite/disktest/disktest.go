// Package disktest gives tests a small filesystem of their own that they
// can fill up, to show what Herald does when its data disk is full: a
// size-limited tmpfs mounted on a temporary directory, which needs root
// (or CAP_SYS_ADMIN); elsewhere the test is skipped, saying why.
package disktest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Small mounts a tmpfs of size bytes on a new temporary directory,
// unmounted and removed when the test ends, and returns the directory.
// The test is skipped when the mount is refused (not root, no tmpfs).
func Small(t testing.TB, size int64) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "herald-disk-")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		_ = os.Remove(dir)
		t.Skipf("no small filesystem to fill: mounting a %d-byte tmpfs needs root or CAP_SYS_ADMIN: %v", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
		_ = os.Remove(dir)
	})
	return dir
}

// Fill writes a file in dir until the filesystem has no room left
// (ENOSPC) and returns a function that removes it, freeing the space.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for size := len(block); size >= 1; size /= 2 { // to the last byte
		for {
			_, err := f.Write(block[:size])
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				t.Fatalf("filling %s: %v", dir, err)
			}
		}
	}
	return func() {
		if err := os.Remove(name); err != nil {
			t.Errorf("free %s: %v", dir, err)
		}
	}
}
