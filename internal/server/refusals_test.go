package server_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/api"
	"github.com/herald-events/herald/internal/server"
	"github.com/herald-events/herald/internal/store/postgres/pgtest"
	"github.com/herald-events/herald/internal/store/sqlite/disktest"
)

// storeAway gives a test a store it can take away and bring back: with
// HERALD_TEST_STORE=postgres a PostgreSQL server of the test's own
// (stopped and started again), else SQLite on a small filesystem (filled
// up and freed). tune points the server at it.
type storeAway struct {
	tune       func(*server.Config)
	away, back func()
}

func newStoreAway(t *testing.T) *storeAway {
	if os.Getenv("HERALD_TEST_STORE") == "postgres" {
		pg := pgtest.OwnServer(t)
		return &storeAway{tune: func(c *server.Config) { c.Store = pg.URL() },
			away: func() { pg.Stop("fast") }, back: pg.Start}
	}
	dir := disktest.Small(t, 16<<20)
	sa := &storeAway{tune: func(c *server.Config) { c.DataDir, c.Store = dir, "" }}
	var free func()
	sa.away = func() { free = disktest.Fill(t, dir) }
	sa.back = func() { free() }
	return sa
}

// TestStoreAwayRefusalLog: while the store is away (PostgreSQL stopped, or
// SQLite's disk full) 200 publishes refused 503 write one warn line
// (requests refused) and 200 request lines at debug, none at warn; a
// refusal api.RefusalLogInterval later (the fake clock) writes one line
// counting those since the first; once the store is back, the first
// publish answered writes one info line counting every refusal.
func TestStoreAwayRefusalLog(t *testing.T) {
	sa := newStoreAway(t)
	logs := &logBuffer{}
	b := setup(t, sa.tune, jsonLog(logs, slog.LevelDebug))
	pad := strings.Repeat("x", 8<<10)
	publish := func(id string) int {
		code, _ := b.do("POST", "/v1/events", map[string]any{"specversion": "1.0", "id": id, "source": "/s", "type": "t", "data": map[string]string{"pad": pad}}, nil)
		return code
	}
	sa.away()
	refused := 0
	for i := 0; refused == 0 && i < 10_000; i++ { // a full disk: until the write-ahead log cannot grow
		if code := publish(fmt.Sprint("fill-", i)); code == http.StatusServiceUnavailable {
			refused++
		} else if code != http.StatusAccepted {
			t.Fatalf("publishing while the store goes away: %d", code)
		}
	}
	for i := range 199 {
		if code := publish(fmt.Sprint("away-", i)); code != http.StatusServiceUnavailable {
			t.Fatalf("publish %d while the store is away: %d, want 503", i, code)
		}
		refused++
	}
	lines := linesOf(t, logs, "requests refused (503)")
	if len(lines) != 1 || lines[0]["level"] != "WARN" || lines[0]["refused"] != 1.0 {
		t.Fatalf("%d refusals: the refusal lines %v; want one warn line, refused=1", refused, lines)
	}
	debug, warn := 0, 0
	for _, l := range linesOf(t, logs, "request") {
		if l["status"] == 503.0 {
			debug += map[bool]int{true: 1}[l["level"] == "DEBUG"]
			warn += map[bool]int{true: 1}[l["level"] == "WARN"]
		}
	}
	if debug != refused || warn != 0 {
		t.Fatalf("%d refusals: %d request lines at debug and %d at warn; want %d and none", refused, debug, warn, refused)
	}

	b.clk.Advance(api.RefusalLogInterval)
	if code := publish("later"); code != http.StatusServiceUnavailable {
		t.Fatalf("a publish an interval later: %d, want 503", code)
	}
	refused++
	if lines := linesOf(t, logs, "requests refused (503)"); len(lines) != 2 || lines[1]["refused"] != float64(refused-1) {
		t.Fatalf("an interval later: the refusal lines %v; want 2, the second refused=%d", lines, refused-1)
	}

	sa.back()
	eventually(t, "a publish answered once the store is back", func() bool {
		code := publish("back")
		refused += map[bool]int{true: 1}[code == http.StatusServiceUnavailable]
		return code == http.StatusAccepted
	})
	back := linesOf(t, logs, "store back: requests answered again after refusals")
	if len(back) != 1 || back[0]["level"] != "INFO" || back[0]["refused"] != float64(refused) {
		t.Fatalf("the store back after %d refusals: the lines %v; want one info line, refused=%d", refused, back, refused)
	}
	if lines := linesOf(t, logs, "requests refused (503)"); len(lines) > 3 {
		t.Fatalf("%d refusals wrote %d warn lines within two intervals", refused, len(lines))
	}
}
