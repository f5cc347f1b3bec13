package client

import (
	"context"
	"time"
)

// ReceiveParams is the body of Subscriptions.Receive (schema
// ReceiveRequest; docs/queue.md): at most MaxEvents (0: the server's
// default), waiting up to MaxWait for the first (nil: none), locked for
// LockDuration (nil: the default).
type ReceiveParams struct {
	MaxEvents    int       `json:"max_events,omitempty"`
	MaxWait      *Duration `json:"max_wait,omitempty"`
	LockDuration *Duration `json:"lock_duration,omitempty"`
}

// ReceiveResult is Subscriptions.Receive's answer (schema
// ReceiveResponse).
type ReceiveResult struct {
	Data []ReceivedDelivery `json:"data"`
}

// ReceivedDelivery is one delivery received under a lock (schema
// ReceivedDelivery): settle it with its LockToken.
type ReceivedDelivery struct {
	LockToken     string    `json:"lock_token"`
	DeliveryID    string    `json:"delivery_id"`
	DeliveryCount int       `json:"delivery_count"`
	LockedUntil   time.Time `json:"locked_until"`
	Event         *Event    `json:"event"`
}

// lockTokens is the body of acknowledge and reject (schema LockTokens).
type lockTokens struct {
	LockTokens []string `json:"lock_tokens"`
}

// ReleaseParams is the body of Subscriptions.Release (schema
// ReleaseRequest): the lock tokens and the Delay before the deliveries
// may be received again, one of the ReleaseDelay values ("" for none).
type ReleaseParams struct {
	LockTokens []string     `json:"lock_tokens"`
	Delay      ReleaseDelay `json:"delay,omitempty"`
}

// ReleaseDelay is a delay Subscriptions.Release takes.
type ReleaseDelay string

// The delays Subscriptions.Release takes.
const (
	ReleaseNow      ReleaseDelay = "0s"
	ReleaseAfter10s ReleaseDelay = "10s"
	ReleaseAfter1m  ReleaseDelay = "60s"
	ReleaseAfter10m ReleaseDelay = "600s"
	ReleaseAfter1h  ReleaseDelay = "3600s"
)

// RenewLockParams is the body of Subscriptions.RenewLock (schema
// RenewLockRequest): the lock tokens and the new LockDuration (nil: the
// default).
type RenewLockParams struct {
	LockTokens   []string  `json:"lock_tokens"`
	LockDuration *Duration `json:"lock_duration,omitempty"`
}

// SettleResult is the answer of acknowledge, release, reject and
// renew-lock (schema SettleResponse): the tokens that succeeded and those
// that failed, each with why.
type SettleResult struct {
	Succeeded []string      `json:"succeeded"`
	Failed    []FailedToken `json:"failed"`
}

// FailedToken is a lock token a settle could not apply, and why.
type FailedToken struct {
	LockToken string `json:"lock_token"`
	Error     string `json:"error"`
}

// Receive receives queued deliveries of the subscription id under locks
// (POST /v1/subscriptions/{id}/receive). The request's timeout is the
// client's plus p.MaxWait.
func (s *SubscriptionsService) Receive(ctx context.Context, id string, p ReceiveParams) (*ReceiveResult, error) {
	var wait time.Duration
	if p.MaxWait != nil {
		wait = time.Duration(*p.MaxWait)
	}
	return doJSON[ReceiveResult](ctx, s.c, call{op: opReceive, ids: []string{id}, body: p, timeout: wait})
}

// Acknowledge settles received deliveries as delivered (POST
// /v1/subscriptions/{id}/acknowledge).
func (s *SubscriptionsService) Acknowledge(ctx context.Context, id string, tokens []string) (*SettleResult, error) {
	return doJSON[SettleResult](ctx, s.c, call{op: opAcknowledge, ids: []string{id}, body: lockTokens{tokens}})
}

// Release gives received deliveries back to the queue (POST
// /v1/subscriptions/{id}/release).
func (s *SubscriptionsService) Release(ctx context.Context, id string, p ReleaseParams) (*SettleResult, error) {
	return doJSON[SettleResult](ctx, s.c, call{op: opRelease, ids: []string{id}, body: p})
}

// Reject dead-letters received deliveries (POST
// /v1/subscriptions/{id}/reject).
func (s *SubscriptionsService) Reject(ctx context.Context, id string, tokens []string) (*SettleResult, error) {
	return doJSON[SettleResult](ctx, s.c, call{op: opReject, ids: []string{id}, body: lockTokens{tokens}})
}

// RenewLock extends the locks of received deliveries (POST
// /v1/subscriptions/{id}/renew-lock).
func (s *SubscriptionsService) RenewLock(ctx context.Context, id string, p RenewLockParams) (*SettleResult, error) {
	return doJSON[SettleResult](ctx, s.c, call{op: opRenewLock, ids: []string{id}, body: p})
}
