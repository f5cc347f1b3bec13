// Package oauth2 fetches and caches OAuth2 client-credentials tokens
// (RFC 6749 §4.4) for the pushes of subscriptions whose auth is
// oauth2_client_credentials (docs/endpoint-auth.md).
//
// A token is asked for with a form body (grant_type=client_credentials,
// scope as the scopes joined by spaces, audience when set) and the client
// authenticated with HTTP Basic (RFC 6749 §2.3.1, client id and secret
// form-encoded). It is kept until RefreshBefore before its expires_in
// (a token without expires_in is kept for DefaultLifetime), shared by every
// subscription with the same credentials, and concurrent fetches of one
// key are made once. The cache holds at most MaxEntries tokens.
package oauth2

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FetchTimeout bounds one token request (connect, send, read the answer).
const FetchTimeout = 10 * time.Second

// RefreshBefore is how long before its expiry a cached token is fetched
// again.
const RefreshBefore = 30 * time.Second

// DefaultLifetime is how long a token whose answer has no expires_in is
// kept.
const DefaultLifetime = 5 * time.Minute

// MaxEntries bounds the cache: past it, the token expiring first is
// dropped (the fetch under way begun first, only when every entry is one:
// evict).
const MaxEntries = 4096

// maxAnswer bounds how much of a token endpoint's answer is read.
const maxAnswer = 64 << 10

// Credentials say where and how to ask for a token.
type Credentials struct {
	TokenURL, ClientID, ClientSecret string
	Scopes                           []string
	Audience                         string
}

// key is the cache key of c: a hash of every field, so that the secret is
// not kept as a map key.
func (c Credentials) key() [32]byte {
	h := sha256.New()
	for _, s := range append([]string{c.TokenURL, c.ClientID, c.ClientSecret, c.Audience}, c.Scopes...) {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// Cache fetches tokens with its client and keeps them. It is safe for
// concurrent use.
type Cache struct {
	client  *http.Client
	now     func() time.Time
	mu      sync.Mutex
	tokens  map[[32]byte]*entry
	fetches uint64 // fetches begun, numbering entries
}

// entry is one key's token, or the fetch of it under way (done not yet
// closed).
type entry struct {
	seq     uint64 // Cache.fetches when its fetch began
	done    chan struct{}
	token   string
	expires time.Time
	err     error
}

// New returns a Cache fetching with client (its transport: the guarded
// dialer and the trusted CAs of the pushes) and telling time with now.
func New(client *http.Client, now func() time.Time) *Cache {
	return &Cache{client: client, now: now, tokens: make(map[[32]byte]*entry)}
}

// Token returns a token for c: the cached one while it has more than
// RefreshBefore to live, else a new one (one fetch for all who ask at
// once). A fetch failure is returned to every caller waiting on it and not
// cached.
func (k *Cache) Token(ctx context.Context, c Credentials) (string, error) {
	key := c.key()
	k.mu.Lock()
	e := k.tokens[key]
	if e != nil {
		select {
		case <-e.done:
			if e.err != nil || !k.now().Before(e.expires.Add(-RefreshBefore)) {
				e = nil
			}
		default:
		}
	}
	if e == nil {
		k.fetches++
		e = &entry{seq: k.fetches, done: make(chan struct{})}
		k.evict()
		k.tokens[key] = e
		go k.fetch(key, e, c)
	}
	k.mu.Unlock()
	select {
	case <-e.done:
		return e.token, e.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Invalidate drops c's cached token if it is still token (an endpoint
// refused it), so that the next Token fetches a new one.
func (k *Cache) Invalidate(c Credentials, token string) {
	key := c.key()
	k.mu.Lock()
	defer k.mu.Unlock()
	if e := k.tokens[key]; e != nil {
		select {
		case <-e.done:
			if e.token == token {
				delete(k.tokens, key)
			}
		default:
		}
	}
}

// evict makes room for one entry: at MaxEntries, it drops the finished
// entry expiring first (an expired one before any other) or, when every
// entry is a fetch under way, the one begun first: its callers still get
// its answer, which is then not kept (fetch ends an entry no longer in
// the map). So the map never holds more than MaxEntries (k.mu held).
func (k *Cache) evict() {
	if len(k.tokens) < MaxEntries {
		return
	}
	var victim [32]byte
	var first, oldest *entry
	for key, e := range k.tokens {
		select {
		case <-e.done:
			if first == nil || e.expires.Before(first.expires) {
				victim, first = key, e
			}
		default:
			if first == nil && (oldest == nil || e.seq < oldest.seq) {
				victim, oldest = key, e
			}
		}
	}
	delete(k.tokens, victim)
}

// fetch asks for e's token, within FetchTimeout, and ends e. A failed
// fetch is removed from the cache.
func (k *Cache) fetch(key [32]byte, e *entry, c Credentials) {
	ctx, cancel := context.WithTimeout(context.Background(), FetchTimeout)
	defer cancel()
	e.token, e.expires, e.err = k.request(ctx, c)
	if e.err != nil {
		k.mu.Lock()
		if k.tokens[key] == e {
			delete(k.tokens, key)
		}
		k.mu.Unlock()
	}
	close(e.done)
}

// answer is a token endpoint's answer (RFC 6749 §5.1, §5.2).
type answer struct {
	AccessToken string      `json:"access_token"`
	TokenType   string      `json:"token_type"`
	ExpiresIn   json.Number `json:"expires_in"`
	Error       string      `json:"error"`
	Description string      `json:"error_description"`
}

// request makes one token request and reads its answer. Its errors say
// what went wrong without the secret.
func (k *Cache) request(ctx context.Context, c Credentials) (string, time.Time, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(c.Scopes) > 0 {
		form.Set("scope", strings.Join(c.Scopes, " "))
	}
	if c.Audience != "" {
		form.Set("audience", c.Audience)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, errors.New("token request: the token URL does not parse")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.ClientSecret))
	begin := k.now()
	resp, err := k.client.Do(req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	var a answer
	derr := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(&a)
	switch {
	case resp.StatusCode/100 != 2 && a.Error != "":
		return "", time.Time{}, fmt.Errorf("token endpoint answered %d: %s", resp.StatusCode, strconv.Quote(a.Error))
	case resp.StatusCode/100 != 2:
		return "", time.Time{}, fmt.Errorf("token endpoint answered %d", resp.StatusCode)
	case derr != nil || a.AccessToken == "":
		return "", time.Time{}, errors.New("token endpoint answered without an access_token")
	case a.TokenType != "" && !strings.EqualFold(a.TokenType, "bearer"):
		return "", time.Time{}, fmt.Errorf("token endpoint answered token_type %s, not Bearer", strconv.Quote(a.TokenType))
	}
	life := DefaultLifetime
	if n, err := a.ExpiresIn.Int64(); err == nil && n > 0 {
		life = time.Duration(n) * time.Second
	}
	return a.AccessToken, begin.Add(life), nil
}
