package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/source"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
)

// SourceStore is what the sources' writes need of the store.
type SourceStore interface {
	GetAccount(ctx context.Context, id string) (account.Account, error)
	CreateSource(ctx context.Context, s source.Source) error
	GetSource(ctx context.Context, id string) (source.Source, error)
	UpdateSource(ctx context.Context, s source.Source) error
	DeleteSource(ctx context.Context, id string) error
}

// Sources carries out writes of the broker sources (admin only: the
// caller's to check). It is safe for concurrent use.
type Sources struct {
	Store SourceStore
	Clock clock.Clock
	// Destinations judges the brokers' hosts (source.CheckDestinations).
	Destinations destination.Guard
	// Changed, when set, is called after every write: this node's
	// consumers (internal/sourcing) look at the sources again at once;
	// the other nodes do within their period.
	Changed func()
	// Deleted, when set, is called after a delete with the source as read
	// just before it (internal/sourcing forgets a paused source's state
	// at its broker: no consumer runs to do it).
	Deleted func(source.Source)
}

func (s *Sources) now() time.Time { return s.Clock.Now().UTC().Truncate(time.Millisecond) }

func (s *Sources) written(err error) error {
	if err == nil && s.Changed != nil {
		s.Changed()
	}
	return err
}

// Create stores the source in makes (source.Input.New and
// source.CheckDestinations, whose errors are returned; a
// *strictjson.Error naming account_id for an account that does not
// exist). store.ErrNameTaken, store.ErrSourceLimit.
func (s *Sources) Create(ctx context.Context, in source.Input) (source.Source, error) {
	src, err := in.New(s.now())
	if err != nil {
		return source.Source{}, err
	}
	if _, err := s.Store.GetAccount(ctx, src.AccountID); err != nil {
		return source.Source{}, noAccount(src.AccountID, err)
	}
	if err := source.CheckDestinations(ctx, s.Destinations, src.Config.Conn); err != nil {
		return source.Source{}, err
	}
	return src, s.written(noAccount(src.AccountID, s.Store.CreateSource(ctx, src)))
}

// noAccount is err, or the refusal of account_id when err says the
// account does not exist (read before the source is made, or deleted
// since: the store's create checks it again).
func noAccount(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return strictjson.Errorf("account_id", "no account %s (GET /v1/accounts lists them)", id)
	}
	return err
}

// Update reads the source, applies in (source.Input.Apply, whose error is
// returned and nothing written) and stores it at its next revision; when
// another write came between, it reads and applies it again. A change
// that leaves the source's settings as they were (source.SameSettings)
// writes nothing and answers the source as it is.
// store.ErrNotFound, store.ErrNameTaken.
func (s *Sources) Update(ctx context.Context, id string, in source.Input) (source.Source, error) {
	return s.change(ctx, id, func(src *source.Source, now time.Time) error {
		changed := *src
		if err := in.Apply(&changed, now); err != nil {
			return err
		}
		if changed.SameSettings(*src) {
			return errUnchanged
		}
		*src = changed
		if in.URL == nil && in.Brokers == nil {
			return nil
		}
		return source.CheckDestinations(ctx, s.Destinations, src.Config.Conn)
	})
}

// SetPaused pauses (true) or resumes a source; a source already so is
// answered as it is, unwritten.
func (s *Sources) SetPaused(ctx context.Context, id string, paused bool) (source.Source, error) {
	return s.change(ctx, id, func(src *source.Source, now time.Time) error {
		if src.Paused == paused {
			return errUnchanged
		}
		src.Paused, src.UpdatedAt = paused, now
		src.Revision++
		return nil
	})
}

// Delete deletes a source, its dead letters and its lease; its consumer
// stops, and Deleted is told. store.ErrNotFound.
func (s *Sources) Delete(ctx context.Context, id string) error {
	if s.Deleted == nil {
		return s.written(s.Store.DeleteSource(ctx, id))
	}
	src, err := s.Store.GetSource(ctx, id)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteSource(ctx, id); err != nil {
		return err
	}
	s.Deleted(src)
	return s.written(nil)
}

// errUnchanged: a change found nothing to write.
var errUnchanged = errors.New("unchanged")

// change reads source id, lets fn modify it and writes it, again from the
// read when another write came between (at most maxUpdateTries times).
func (s *Sources) change(ctx context.Context, id string, fn func(*source.Source, time.Time) error) (source.Source, error) {
	for try := 1; ; try++ {
		src, err := s.Store.GetSource(ctx, id)
		if err != nil {
			return source.Source{}, err
		}
		switch err := fn(&src, s.now()); {
		case errors.Is(err, errUnchanged):
			return src, nil
		case err != nil:
			return source.Source{}, err
		}
		err = s.Store.UpdateSource(ctx, src)
		if errors.Is(err, store.ErrConflict) && try < maxUpdateTries {
			continue
		}
		if err != nil {
			return source.Source{}, fmt.Errorf("source %s: %w", id, err)
		}
		return src, s.written(nil)
	}
}
