package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/herald-events/herald/internal/console"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/stats"
)

// The background work that keeps a process current: the catalog reload,
// the change feed of a store shared with other processes, and the
// retention clean-up (old events, idle console sessions, old delivery
// stats, finished jobs). Each is a startstop.Service that Server.Start
// starts (services.go).

// maintenance is what the background work needs of the store.
type maintenance interface {
	Cleanup(ctx context.Context, before time.Time, limit int) (int, error)
	DeleteIdleSessions(ctx context.Context, before time.Time) (int, error)
	DeleteOldStats(ctx context.Context, before time.Time, limit int) (int, error)
	DeleteFinishedJobs(ctx context.Context, before time.Time, limit int) (int, error)
	TryLead(ctx context.Context, name, owner string, now, until time.Time) (bool, error)
}

// changeFeed is implemented by stores that announce other processes'
// writes (PostgreSQL, with LISTEN/NOTIFY).
type changeFeed interface {
	SubscriptionsChanged() <-chan struct{}
	EndpointsChanged() <-chan struct{}
}

// newCatalogReload returns the loop that keeps the catalog current: it
// reads subscription changes from the store every Config.CatalogReload, and
// at once when kicked (by the change feed, when the store announces one).
func (s *Server) newCatalogReload() *startstop.Loop {
	log := s.cfg.Logger.With("component", "background")
	return startstop.NewPeriodic("catalog reload", s.cfg.Clock, s.cfg.CatalogReload, func(ctx context.Context) {
		// Bounded, not cancelled by Stop: Stop waits for the read.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := s.Catalog.Sync(ctx); err != nil {
			log.Warn("reading subscription changes", "err", err)
		}
	})
}

// feed passes a shared store's announcements on, as they come:
// subscription changes to the catalog reload (a kick), endpoint health
// changes to the engine's health sync.
type feed struct {
	startstop.Base
	store         changeFeed
	reload        *startstop.Loop
	healthChanged func()
}

// Start passes announcements on, on a goroutine of its own, until Stop.
func (f *feed) Start(ctx context.Context) error {
	f.StartGo(ctx, f.run)
	return nil
}

func (f *feed) run(ctx context.Context) {
	subs, endpoints := f.store.SubscriptionsChanged(), f.store.EndpointsChanged()
	for {
		select {
		case <-ctx.Done():
			return
		case <-subs:
			f.reload.Kick()
		case <-endpoints:
			f.healthChanged()
		}
	}
}

// Retention clean-up: every cleanupEvery, on one node, rounds of at most
// Config.CleanupBatch events each until a round finds fewer (the backlog is
// cleared) or the clean-up has run for cleanupFor; then rounds of finished
// jobs likewise, in what is left of that time (one at least). A round is one write of the
// store's, so the rounds keep each write short; the time bound keeps a
// node that fell far behind from cleaning for longer than its term as the
// cleaning node.
const (
	cleanupEvery = time.Minute
	cleanupFor   = 50 * time.Second
)

// newCleanup returns the loop that deletes finished events older than the
// dedup retention and finished jobs older than the job retention (see the
// constants above), on one node at a time; a loop of its own, so a long
// clean-up never delays the catalog.
func (s *Server) newCleanup() *startstop.Loop {
	log := s.cfg.Logger.With("component", "cleanup")
	return startstop.NewPeriodic("retention clean-up", s.cfg.Clock, cleanupEvery, func(ctx context.Context) {
		now := s.cfg.Clock.Now()
		// Store calls are bounded, not cancelled by Stop: Stop waits for
		// the one in progress and ends the rounds between two.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupFor+10*time.Second)
		defer cancel()
		if s.lead(sctx, "cleanup", now, 2*cleanupEvery) {
			s.cleanupRounds(ctx, sctx, now, log)
			s.deleteIdleSessions(sctx, now, log)
			s.deleteOldStats(sctx, now, log)
			s.deleteRounds(ctx, now, "deleting finished jobs", log, func() (int, error) {
				var st maintenance = s.Store
				return st.DeleteFinishedJobs(sctx, now.Add(-s.cfg.JobRetention), s.cfg.CleanupBatch)
			})
		}
	})
}

// cleanupRounds runs the clean-up's rounds of events (see cleanupEvery),
// each within sctx, until they are done or stop ends, and returns the
// number of events deleted.
func (s *Server) cleanupRounds(stop, sctx context.Context, now time.Time, log *slog.Logger) int {
	var st maintenance = s.Store
	return s.deleteRounds(stop, now, "deleting old events", log, func() (int, error) {
		return st.Cleanup(sctx, now.Add(-s.cfg.DedupRetention), s.cfg.CleanupBatch)
	})
}

// deleteRounds calls round, which deletes at most Config.CleanupBatch
// rows, until it deletes fewer, fails (logged as what), stop ends or the
// clean-up that began at now has run for cleanupFor; it returns the number
// of rows deleted.
func (s *Server) deleteRounds(stop context.Context, now time.Time, what string, log *slog.Logger, round func() (int, error)) int {
	deleted := 0
	for {
		n, err := round()
		deleted += n
		if err != nil {
			log.Warn(what, "err", err)
			return deleted
		}
		if stop.Err() != nil || n < s.cfg.CleanupBatch || s.cfg.Clock.Now().Sub(now) >= cleanupFor {
			return deleted
		}
	}
}

// deleteIdleSessions deletes the portal sessions expired before then and the console sessions idle for
// console.IdleTimeout (one store write; a session idle that long is
// refused already, this only frees its row).
func (s *Server) deleteIdleSessions(ctx context.Context, now time.Time, log *slog.Logger) {
	var st maintenance = s.Store
	if _, err := st.DeleteIdleSessions(ctx, now.Add(-console.IdleTimeout)); err != nil {
		log.Warn("deleting idle console sessions", "err", err)
	}
}

// deleteOldStats deletes the delivery rollups older than stats.Retention:
// one store write of at most Config.CleanupBatch rows a round (a minute
// writes a row per subscription and endpoint that delivered in it, so the
// rounds keep up with any pace of at most that many a minute).
func (s *Server) deleteOldStats(ctx context.Context, now time.Time, log *slog.Logger) {
	var st maintenance = s.Store
	if _, err := st.DeleteOldStats(ctx, now.Add(-stats.Retention), s.cfg.CleanupBatch); err != nil {
		log.Warn("deleting old delivery stats", "err", err)
	}
}

// lead reports whether this process holds the named cluster-wide role for
// the next term (taking it if it is free), so that periodic work runs on one
// node only.
func (s *Server) lead(ctx context.Context, role string, now time.Time, term time.Duration) bool {
	var st maintenance = s.Store
	ok, err := st.TryLead(ctx, role, s.cfg.Scheduling.Owner, now, now.Add(term))
	if err != nil {
		s.cfg.Logger.Warn("taking a cluster role", "role", role, "err", err)
	}
	return ok && err == nil
}
