package oauth2

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/clock"
)

// endpoint is a token endpoint on loopback: arrived gets each request as
// it comes in (buffered), requests counts them.
type endpoint struct {
	*httptest.Server
	arrived  chan struct{}
	requests atomic.Int64
}

// tokenEndpoint issues tok-N valid for an hour; it holds each answer until
// release is closed.
func tokenEndpoint(t *testing.T, release chan struct{}) (*endpoint, *atomic.Int64) {
	var n atomic.Int64
	srv := &endpoint{arrived: make(chan struct{}, 100)}
	srv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.requests.Add(1)
		srv.arrived <- struct{}{}
		<-release
		id, secret, _ := r.BasicAuth()
		if id != "id" || secret != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"bearer","expires_in":3600}`, n.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestTokenCollapsedCachedAndRefreshed: while one fetch is under way,
// other callers for the same credentials wait on it rather than fetch (20
// of them, whose contexts end first, leave no fetch behind); its token is
// reused until 30 s before it expires, then fetched again; Invalidate
// drops it; wrong credentials fail, uncached.
func TestTokenCollapsedCachedAndRefreshed(t *testing.T) {
	release := make(chan struct{})
	srv, fetched := tokenEndpoint(t, release)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := New(srv.Client(), clk.Now)
	creds := Credentials{TokenURL: srv.URL, ClientID: "id", ClientSecret: "secret", Scopes: []string{"a"}}
	first := make(chan string)
	go func() {
		tok, err := c.Token(context.Background(), creds)
		if err != nil {
			t.Error(err)
		}
		first <- tok
	}()
	<-srv.arrived // the fetch is under way
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 {
		if _, err := c.Token(canceled, creds); err != context.Canceled {
			t.Fatalf("a caller during the fetch: %v, want to wait on it until its context ends", err)
		}
	}
	close(release)
	if tok := <-first; tok != "tok-1" {
		t.Fatalf("first token %q", tok)
	}
	for range 20 {
		if tok, _ := c.Token(context.Background(), creds); tok != "tok-1" {
			t.Fatalf("cached: %q, want tok-1", tok)
		}
	}
	if fetched.Load() != 1 || srv.requests.Load() != 1 {
		t.Fatalf("%d tokens issued on %d requests for 41 callers, want 1", fetched.Load(), srv.requests.Load())
	}
	clk.Advance(time.Hour - RefreshBefore - time.Second)
	if tok, _ := c.Token(context.Background(), creds); tok != "tok-1" {
		t.Fatalf("31 s before expiry: %s, want the cached tok-1", tok)
	}
	clk.Advance(time.Second)
	if tok, _ := c.Token(context.Background(), creds); tok != "tok-2" {
		t.Fatalf("30 s before expiry: %s, want tok-2", tok)
	}
	c.Invalidate(creds, "tok-1") // not the cached one: no effect
	if tok, _ := c.Token(context.Background(), creds); tok != "tok-2" {
		t.Fatalf("after invalidating an older token: %s", tok)
	}
	c.Invalidate(creds, "tok-2")
	if tok, _ := c.Token(context.Background(), creds); tok != "tok-3" {
		t.Fatalf("after invalidating tok-2: %s", tok)
	}
	bad := creds
	bad.ClientSecret = "wrong"
	if _, err := c.Token(context.Background(), bad); err == nil || fmt.Sprint(err) != "token endpoint answered 401" {
		t.Fatalf("wrong secret: %v", err)
	}
	if len(c.tokens) != 1 {
		t.Fatalf("%d cached entries, want 1 (a failure is not cached)", len(c.tokens))
	}
}
