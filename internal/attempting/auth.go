package attempting

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"net/http"
	"sync"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/oauth2"
	"github.com/herald-events/herald/internal/subscription"
)

// outcomeAuthFailed is the outcome of an attempt whose authentication
// could not be had: the OAuth2 token endpoint failed (or refused), or the
// client certificate could not be loaded. Nothing reached the endpoint, so
// it says nothing of the endpoint's health; it is retried by the
// subscription's retry policy like any failure.
const outcomeAuthFailed = "auth_failed"

// authError is a failure to authenticate an attempt (outcomeAuthFailed).
type authError struct{ err error }

func (e *authError) Error() string { return "endpoint auth: " + e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

// maxClientCerts bounds the transports kept for mTLS subscriptions (one
// per distinct certificate and key); past it, one is dropped and its idle
// connections closed.
const maxClientCerts = 64

// certIdleConns bounds each mTLS transport's idle connections (besides
// the shared client's MaxIdleConns): at most maxClientCerts ×
// certIdleConns in all.
const certIdleConns = 8

// certClients holds the clients of mTLS subscriptions, keyed by a hash of
// the certificate and key.
type certClients struct {
	mu      sync.Mutex
	clients map[[32]byte]*http.Client
}

// roundTripAuth is roundTrip with sub's auth (subscription.Auth): an
// OAuth2 bearer token, fetched again once and the request sent again once
// when the endpoint answers 401, or the client certificate's transport.
// A failure to authenticate is an *authError.
func (a *Attempter) roundTripAuth(sub *catalog.Entry, req *http.Request) (*http.Response, error) {
	au := sub.Delivery.Auth
	switch {
	case au == nil:
		return a.roundTrip(req, a.cfg.Client)
	case au.Type == subscription.AuthMTLS:
		c, err := a.certClient(au)
		if err != nil {
			return nil, &authError{err}
		}
		return a.roundTrip(req, c)
	}
	creds := oauth2.Credentials{TokenURL: au.TokenURL, ClientID: au.ClientID, ClientSecret: au.ClientSecret,
		Scopes: au.Scopes, Audience: au.Audience}
	token, err := a.cfg.Tokens.Token(req.Context(), creds)
	if err != nil {
		return nil, &authError{err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.roundTrip(req, a.cfg.Client)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || req.GetBody == nil {
		return resp, err
	}
	a.cfg.Tokens.Invalidate(creds, token)
	if token, err = a.cfg.Tokens.Token(req.Context(), creds); err != nil {
		readBody(resp.Body)
		return nil, &authError{err}
	}
	readBody(resp.Body)
	again := req.Clone(req.Context())
	if again.Body, err = req.GetBody(); err != nil {
		return nil, err
	}
	again.Header.Set("Authorization", "Bearer "+token)
	return a.roundTrip(again, a.cfg.Client)
}

// certKey is the key of au's client in certClients: a hash of its
// certificate and key.
func certKey(au *subscription.Auth) [32]byte {
	return sha256.Sum256([]byte(au.Certificate + "\x00" + au.PrivateKey))
}

// certClient returns the client presenting au's certificate: a copy of the
// attempts' transport (the guarded dialer, the trusted CAs) with the
// certificate, kept for the next attempts.
func (a *Attempter) certClient(au *subscription.Auth) (*http.Client, error) {
	key := certKey(au)
	cc := &a.certs
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if c := cc.clients[key]; c != nil {
		return c, nil
	}
	base, ok := a.cfg.Client.Transport.(*http.Transport)
	if !ok {
		return nil, errors.New("this client cannot present a certificate")
	}
	cert, err := tls.X509KeyPair([]byte(au.Certificate), []byte(au.PrivateKey))
	if err != nil {
		return nil, errors.New("the client certificate or its key does not load")
	}
	tr := base.Clone()
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{}
	}
	tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = certIdleConns, certIdleConns
	if cc.clients == nil {
		cc.clients = make(map[[32]byte]*http.Client)
	}
	if len(cc.clients) >= maxClientCerts {
		for k, c := range cc.clients {
			c.CloseIdleConnections()
			delete(cc.clients, k)
			break
		}
	}
	c := &http.Client{Transport: tr, CheckRedirect: a.cfg.Client.CheckRedirect}
	cc.clients[key] = c
	return c, nil
}
