package oauth2

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
)

// numberedEndpoint is a token endpoint on loopback issuing, to the client
// client-N, the token tok-N valid for 3600+N seconds (so client-0's expires
// first); a request to /slow is told on arrived (while it has room) and
// waits for release. fetched counts requests.
func numberedEndpoint(t *testing.T, release, arrived chan struct{}) (*httptest.Server, *atomic.Int64) {
	var fetched atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		if r.URL.Path == "/slow" {
			select {
			case arrived <- struct{}{}:
			default:
			}
			<-release
		}
		id, _, _ := r.BasicAuth()
		n, err := strconv.Atoi(strings.TrimPrefix(id, "client-"))
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":%d}`, n, 3600+n)
	}))
	t.Cleanup(srv.Close)
	return srv, &fetched
}

// cached is how many entries c holds.
func cached(c *Cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tokens)
}

// numbered are client-n's credentials at the endpoint's path.
func numbered(url string, n int) Credentials {
	return Credentials{TokenURL: url, ClientID: "client-" + strconv.Itoa(n), ClientSecret: "secret"}
}

// TestCacheBoundDropsExpiringFirst: MaxEntries (4,096) credentials fill
// the cache, each fetched once; the next one drops the token expiring
// first (client-0's) and no other: client-1's is still served from the
// cache, client-0's is fetched again (dropping client-1's, now the first
// to expire). The cache never holds more than MaxEntries.
func TestCacheBoundDropsExpiringFirst(t *testing.T) {
	srv, fetched := numberedEndpoint(t, nil, nil)
	c := New(srv.Client(), clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).Now)
	ctx := context.Background()
	token := func(n int) {
		t.Helper()
		if tok, err := c.Token(ctx, numbered(srv.URL, n)); err != nil || tok != "tok-"+strconv.Itoa(n) {
			t.Fatalf("client-%d's token: %q, %v", n, tok, err)
		}
		if got := cached(c); got > MaxEntries {
			t.Fatalf("after client-%d's token the cache holds %d entries, more than %d", n, got, MaxEntries)
		}
	}
	for n := range MaxEntries {
		token(n)
	}
	if cached(c) != MaxEntries || fetched.Load() != MaxEntries {
		t.Fatalf("%d credentials: %d cached, %d fetched", MaxEntries, cached(c), fetched.Load())
	}
	for _, step := range []struct {
		n     int
		fetch int64 // requests to the endpoint it makes
	}{{MaxEntries, 1}, {1, 0}, {MaxEntries - 1, 0}, {0, 1}, {2, 0}, {1, 1}} {
		before := fetched.Load()
		token(step.n)
		if got := fetched.Load() - before; got != step.fetch {
			t.Fatalf("client-%d's token at the bound made %d token requests, want %d", step.n, got, step.fetch)
		}
	}
	if cached(c) != MaxEntries {
		t.Fatalf("at the bound the cache holds %d, want %d", cached(c), MaxEntries)
	}
}

// TestCacheBoundWhileFetching: with MaxEntries+10 fetches under way at
// once (the endpoint holding every answer), the cache still holds at most
// MaxEntries entries: the 10 fetches begun first are dropped to make room,
// and no other; the callers waiting on those still get their tokens.
func TestCacheBoundWhileFetching(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{}, 16)
	srv, _ := numberedEndpoint(t, release, arrived)
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free) // before the endpoint closes: a failed test leaves none of its answers held
	client := srv.Client()
	client.Transport.(*http.Transport).MaxConnsPerHost = 16 // the rest wait in the transport, under way all the same
	c := New(client, time.Now)
	url := srv.URL + "/slow"
	const waiting = 10
	got := make(chan string, waiting)
	for n := range waiting {
		go func() {
			tok, err := c.Token(context.Background(), numbered(url, n))
			if err != nil {
				t.Error(err)
			}
			got <- tok
		}()
	}
	for range waiting { // each waiter's fetch is under way: its request arrived
		<-arrived
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel() // callers that do not wait: each leaves its fetch under way
	for n := waiting; n < MaxEntries+waiting; n++ {
		if _, err := c.Token(gone, numbered(url, n)); err == nil {
			t.Fatalf("client-%d: a token with the endpoint holding its answers", n)
		}
		if got := cached(c); got > MaxEntries {
			t.Fatalf("with %d fetches under way the cache holds %d entries, more than %d", n+1, got, MaxEntries)
		}
	}
	c.mu.Lock()
	for n := range MaxEntries + waiting {
		if _, kept := c.tokens[numbered(url, n).key()]; kept != (n >= waiting) {
			t.Errorf("client-%d's fetch kept in the cache: %v, want %v", n, kept, n >= waiting)
		}
	}
	c.mu.Unlock()
	free()
	want := map[string]bool{}
	for n := range waiting {
		want["tok-"+strconv.Itoa(n)] = true
	}
	for range waiting {
		if tok := <-got; !want[tok] {
			t.Fatalf("a caller waiting on a fetch dropped from the cache got %q", tok)
		}
	}
}
