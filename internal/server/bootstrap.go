package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/auth"
	"github.com/herald-events/herald/internal/store"
)

// bootstrapKey gives a new installation its first admin key. With
// HERALD_ADMIN_KEY set nothing is made: that key is the admin's. Otherwise,
// when the store holds no key at all, an admin key is made and written to
// <DataDir>/admin.key (mode 0600; of several nodes starting at once on one
// database, one makes it). A store that already has keys is left alone.
// The data directory is made private (store.MakePrivate: 0700, and an
// admin.key left by an earlier start 0600) whichever way it goes.
func (s *Server) bootstrapKey(ctx context.Context) error {
	if s.cfg.AdminKey != "" {
		return nil
	}
	path := filepath.Join(s.cfg.DataDir, AdminKeyFile)
	secret, k := auth.NewKey(account.DefaultID, account.RoleAdmin, "bootstrap admin key", s.cfg.Clock.Now().UTC().Truncate(time.Millisecond))
	// The key is written to a temporary file of this process
	// (admin.key.*.new) before it is stored and renamed to admin.key
	// after: a crash before the commit leaves a file whose key was never
	// stored (harmless), a crash after it one whose key was, which the next
	// start renames. Each process has its own file, so nodes starting at
	// once on one data directory cannot swap keys.
	if err := store.MakePrivate(s.cfg.DataDir, AdminKeyFile); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		s.recoverKeyFile(ctx, path)
	}
	f, err := os.CreateTemp(s.cfg.DataDir, AdminKeyFile+".*.new") // mode 0600
	if err != nil {
		return fmt.Errorf("writing the admin key: %w", err)
	}
	tmp := f.Name()
	_, werr := f.WriteString(secret + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing the admin key: %w", err)
	}
	made, err := s.Store.CreateFirstKey(ctx, k)
	if err != nil || !made {
		_ = os.Remove(tmp)
		if err != nil {
			return fmt.Errorf("making the first admin key: %w", err)
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			s.cfg.Logger.Info("API keys exist in the store but not in " + path + "; use HERALD_ADMIN_KEY or a key you were given")
		}
		return nil
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the admin key: %w", err)
	}
	s.cfg.Logger.Warn("made the first admin API key; keep it secret", "file", path, "key_id", k.ID)
	return nil
}

// recoverKeyFile renames to path a temporary key file left by a start that
// stored its key and crashed before the rename.
func (s *Server) recoverKeyFile(ctx context.Context, path string) {
	tmps, _ := filepath.Glob(path + ".*.new")
	for _, tmp := range tmps {
		old, err := os.ReadFile(tmp)
		if err != nil {
			continue
		}
		if _, err := s.Store.KeyByHash(ctx, auth.Hash(strings.TrimSpace(string(old)))); err == nil {
			if err := os.Rename(tmp, path); err == nil {
				return
			}
		}
	}
}
