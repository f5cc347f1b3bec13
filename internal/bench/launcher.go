package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// launcher starts a scenario's servers, one at a time: herald serve, or for
// a baseline run the baseline forwarder, each on a fresh store, the first in
// the scenario's directory and each later one in a directory of its own
// under it, on PostgreSQL each in a fresh schema. Every server of the
// scenario is started with the same flags, environment and admin key.
type launcher struct {
	cfg      *Config
	name     string
	baseline bool
	dir      string
	prog     *progress

	// Flags before and after --store (when the store is PostgreSQL),
	// environment and admin key of every server.
	flagsPre, flagsPost []string
	serveEnv            []string
	adminKey            string

	started  int      // servers started
	drops    []func() // drop the PostgreSQL schemas, after the servers
	pgSchema string   // the current server's PostgreSQL schema ("" on SQLite)
}

// newLauncher is the launcher of scenario name, its servers under dir,
// with the flags the scenario and cfg give them.
func newLauncher(cfg *Config, name string, baseline bool, dir string, prog *progress) *launcher {
	l := &launcher{cfg: cfg, name: name, baseline: baseline, dir: dir, prog: prog}
	if name == "backlog" || name == "console" {
		// The backlog's endpoints fail every first attempt on purpose; the
		// endpoint circuit would put them on probation or disable them and
		// stop the first attempts. Its thresholds go out of reach so the
		// scenario measures what the budget line names: a million
		// deliveries pending retry; console's dead-lettering endpoint
		// likewise keeps receiving its first attempts. (Flags the binary
		// lacks are left out.)
		l.flagsPre = append(l.flagsPre, supported(cfg.Herald, relaxedHealth)...)
	}
	if name == "soak" {
		// Retention short enough that clean-up runs behind the load: see
		// soakScenario.
		l.flagsPre = append(l.flagsPre, "--dedup-retention", cfg.Sizes.SoakRetention.String())
	}
	l.flagsPost = append(l.flagsPost, cfg.ServeArgs...)
	if cfg.Pprof != "" {
		l.flagsPost = append(l.flagsPost, "--pprof", cfg.Pprof)
	}
	l.serveEnv = cfg.ServeEnv
	// The server runs with authentication on, as users run it: the bench
	// is its admin through a key made for this run (not in the report).
	l.adminKey = benchAdminKey()
	return l
}

// nextDir returns the directory of the scenario's next server (herald serve
// or the forwarder) and counts it: the scenario's directory for the first,
// a directory of its own under it for each later one.
func (l *launcher) nextDir() (string, error) {
	dir := l.dir
	if l.started > 0 {
		dir = filepath.Join(l.dir, fmt.Sprintf("server-%d", l.started+1))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", err
		}
	}
	l.started++
	return dir, nil
}

// start starts the scenario's next server and returns it with the flags it
// was given beyond the usual ones (when it got that far, also on an error).
func (l *launcher) start(ctx context.Context) (*server, []string, error) {
	if l.baseline {
		srv, err := l.startForwarder(ctx)
		return srv, nil, err
	}
	return l.startHerald(ctx)
}

// startHerald starts herald serve on a fresh store.
func (l *launcher) startHerald(ctx context.Context) (*server, []string, error) {
	dir, err := l.nextDir()
	if err != nil {
		return nil, nil, err
	}
	extra := slices.Clone(l.flagsPre)
	if isPostgres(l.cfg.Store) {
		schemaURL, drop, err := freshSchema(ctx, l.cfg.Store)
		if err != nil {
			return nil, nil, err
		}
		if !l.cfg.Keep {
			l.drops = append(l.drops, drop)
		}
		l.pgSchema = schemaOf(schemaURL)
		extra = append(extra, "--store", schemaURL)
	}
	extra = append(extra, l.flagsPost...)
	l.prog.set(func() string { return l.name + ": starting herald serve" })
	srv, err := startServer(ctx, l.cfg.Herald, dir, extra, append(slices.Clone(l.serveEnv), "HERALD_ADMIN_KEY="+l.adminKey))
	return srv, extra, err
}

// startForwarder starts the baseline forwarder as startHerald starts herald
// serve.
func (l *launcher) startForwarder(ctx context.Context) (*server, error) {
	dir, err := l.nextDir()
	if err != nil {
		return nil, err
	}
	if len(l.cfg.Forwarder) == 0 {
		return nil, fmt.Errorf("no baseline forwarder command")
	}
	args := append(slices.Clone(l.cfg.Forwarder[1:]), "--listen", "127.0.0.1:0")
	l.prog.set(func() string { return l.name + " (baseline): starting the forwarder" })
	return startChild(ctx, childSpec{what: "herald-bench forwarder", bin: l.cfg.Forwarder[0], args: args, dir: dir,
		log: "forwarder.log", announce: forwarderAnnounce, env: l.serveEnv})
}

// dropSchemas drops the PostgreSQL schemas of the scenario's servers, once
// they have stopped.
func (l *launcher) dropSchemas() {
	for _, drop := range l.drops {
		drop()
	}
}

// serverUsage sums the CPU time and the peak resident memory of a
// scenario's servers, one after another.
type serverUsage struct {
	cpu0     time.Duration // the current server's CPU when it was ready
	cpuDone  time.Duration // CPU of the scenario's servers already stopped
	peakDone int64         // their largest VmHWM
}

// begin counts the CPU of srv, the new current server, from now.
func (u *serverUsage) begin(srv *server) { u.cpu0 = procCPU(srv.pid) }

// end adds the figures of srv, the current server, before it stops.
func (u *serverUsage) end(srv *server) {
	u.cpuDone += procCPU(srv.pid) - u.cpu0
	u.peakDone = max(u.peakDone, procMem(srv.pid).Peak)
}

// cpu is the CPU time the scenario's servers used since they were ready,
// cur (nil when none runs) being the current one.
func (u *serverUsage) cpu(cur *server) time.Duration {
	d := u.cpuDone
	if cur != nil {
		d += procCPU(cur.pid) - u.cpu0
	}
	return d
}

// peak is the largest peak resident memory (VmHWM) of the scenario's
// servers, cur (nil when none runs) being the current one.
func (u *serverUsage) peak(cur *server) int64 {
	p := u.peakDone
	if cur != nil {
		p = max(p, procMem(cur.pid).Peak)
	}
	return p
}
