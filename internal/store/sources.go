package store

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/source"
)

// SourceStore keeps the broker sources (internal/source), their
// consumers' reports and their dead letters. The consumers' lease is a
// role of TryLead's, "source:<id>".
type SourceStore interface {
	// CreateSource inserts s. ErrNotFound when its account does not
	// exist (read so that a DeleteAccount waits for this write, or this
	// write for it: the account then holds a source and is not deleted);
	// ErrNameTaken when a source of its account has its name (names are
	// optional: "" is never taken);
	// ErrSourceLimit when the installation already holds
	// source.MaxSources.
	CreateSource(ctx context.Context, s source.Source) error
	// GetSource returns one source, or ErrNotFound.
	GetSource(ctx context.Context, id string) (source.Source, error)
	// ListSources returns a page of every account's sources in ID order
	// after the cursor (IDCursor). An item's bytes (MaxPageBytes): its
	// config and last error.
	ListSources(ctx context.Context, p Page) ([]source.Source, string, error)
	// AllSources returns every source (at most source.MaxSources) in ID
	// order, in one snapshot.
	AllSources(ctx context.Context) ([]source.Source, error)
	// UpdateSource replaces the name, config, pause and UpdatedAt of the
	// source of s's ID when it is still at revision s.Revision-1 (s's is
	// the one written); the status is left alone. ErrNotFound when absent,
	// ErrConflict when another write came between, ErrNameTaken when
	// another source of its account has the name.
	UpdateSource(ctx context.Context, s source.Source) error
	// DeleteSource deletes a source, its dead letters and its consumers'
	// lease; ErrNotFound when absent.
	DeleteSource(ctx context.Context, id string) error
	// ReportSource adds a consumer's report to its source's status
	// (source.Report); a source deleted since is ErrNotFound.
	ReportSource(ctx context.Context, id string, r source.Report) error
	// AddSourceDeadLetter stores a dead letter and counts it in its
	// source's status, deleting the oldest beyond source.MaxDeadLetters,
	// in one transaction; ErrNotFound (nothing stored) when the source was
	// deleted.
	AddSourceDeadLetter(ctx context.Context, dl source.DeadLetter) error
	// ListSourceDeadLetters returns a page of a source's dead letters in
	// ID (arrival) order after the cursor (IDCursor). An item's bytes:
	// its body and reason.
	ListSourceDeadLetters(ctx context.Context, sourceID string, p Page) ([]source.DeadLetter, string, error)
	// SourceLeader returns the owner (the node, as TryLead names it) whose
	// consumer holds source id's lease (SourceLeaderRole) and the end of
	// its term; "" when no node holds it at now (none took it, or its
	// term ended).
	SourceLeader(ctx context.Context, id string, now time.Time) (owner string, until time.Time, err error)
}

// ErrSourceLimit: CreateSource found source.MaxSources sources. The call
// wrote nothing.
var ErrSourceLimit = fmt.Errorf("the installation holds as many sources as allowed (%d)", source.MaxSources)

// SourceLeaderRole is the TryLead role of a source's consumer: the node
// that holds it runs the consumer.
func SourceLeaderRole(id string) string { return "source:" + id }

// SourceCursor and SourceDeadLetterCursor are the formats of the source
// lists' cursors.
var (
	SourceCursor           = IDCursor{source.IDs}
	SourceDeadLetterCursor = IDCursor{source.DeadLetterIDs}
)
