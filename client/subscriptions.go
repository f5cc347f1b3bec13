package client

import (
	"context"
)

// SubscriptionsService calls /v1/subscriptions and its actions; its
// queue methods (Receive, Acknowledge, Release, Reject, RenewLock) are in
// queue.go.
type SubscriptionsService struct{ c *Client }

// Create makes a subscription (POST /v1/subscriptions).
func (s *SubscriptionsService) Create(ctx context.Context, in SubscriptionInput) (*Subscription, error) {
	return doJSON[Subscription](ctx, s.c, call{op: opCreateSubscription, body: in})
}

// List returns one page of subscriptions (GET /v1/subscriptions).
func (s *SubscriptionsService) List(ctx context.Context, p SubscriptionListParams) (*Page[Subscription], error) {
	q := p.values()
	setIf(q, "name", p.Name)
	return doJSON[Page[Subscription]](ctx, s.c, call{op: opListSubscriptions, query: q})
}

// Get returns the subscription id (GET /v1/subscriptions/{id}).
func (s *SubscriptionsService) Get(ctx context.Context, id string) (*Subscription, error) {
	return doJSON[Subscription](ctx, s.c, call{op: opGetSubscription, ids: []string{id}})
}

// Update changes the subscription id (PATCH /v1/subscriptions/{id}).
func (s *SubscriptionsService) Update(ctx context.Context, id string, in SubscriptionUpdate) (*Subscription, error) {
	return doJSON[Subscription](ctx, s.c, call{op: opUpdateSubscription, ids: []string{id}, body: in})
}

// Delete removes the subscription id (DELETE /v1/subscriptions/{id}).
func (s *SubscriptionsService) Delete(ctx context.Context, id string) error {
	return s.c.do(ctx, call{op: opDeleteSubscription, ids: []string{id}})
}

// Secret returns the subscription's signing key (GET
// /v1/subscriptions/{id}/secret).
func (s *SubscriptionsService) Secret(ctx context.Context, id string) (*SubscriptionSecret, error) {
	return doJSON[SubscriptionSecret](ctx, s.c, call{op: opGetSecret, ids: []string{id}})
}

// RotateSecret makes a new signing key current (POST
// /v1/subscriptions/{id}/secret/rotate).
func (s *SubscriptionsService) RotateSecret(ctx context.Context, id string, p RotateSecretParams) (*SubscriptionSecret, error) {
	return doJSON[SubscriptionSecret](ctx, s.c, call{op: opRotateSecret, ids: []string{id}, body: p})
}

// Reactivate makes a deactivated push subscription active and its queued
// deliveries pending (POST /v1/subscriptions/{id}/reactivate).
func (s *SubscriptionsService) Reactivate(ctx context.Context, id string) (*ReactivatedSubscription, error) {
	return doJSON[ReactivatedSubscription](ctx, s.c, call{op: opReactivate, ids: []string{id}})
}

// Deactivate pauses a push subscription by hand (POST
// /v1/subscriptions/{id}/deactivate).
func (s *SubscriptionsService) Deactivate(ctx context.Context, id string) (*Subscription, error) {
	return doJSON[Subscription](ctx, s.c, call{op: opDeactivate, ids: []string{id}})
}

// Recover starts a job making the failed deliveries of a time range due
// again (POST /v1/subscriptions/{id}/recover); follow it with Jobs.Get.
func (s *SubscriptionsService) Recover(ctx context.Context, id string, p RecoverParams) (*Job, error) {
	return doJSON[Job](ctx, s.c, call{op: opRecover, ids: []string{id}, body: p})
}

// Test sends a test event to the subscription (POST
// /v1/subscriptions/{id}/test).
func (s *SubscriptionsService) Test(ctx context.Context, id string, p TestEventParams) (*TestEventResult, error) {
	return doJSON[TestEventResult](ctx, s.c, call{op: opTestEvent, ids: []string{id}, body: p})
}

// FilterTest says whether e would match the subscription's filters (POST
// /v1/subscriptions/{id}/filter-test); nothing is published.
func (s *SubscriptionsService) FilterTest(ctx context.Context, id string, e Event) (*FilterTestResult, error) {
	return doJSON[FilterTestResult](ctx, s.c, call{op: opFilterTest, ids: []string{id}, body: e.withSpecVersion()})
}

// FilterTestUnsaved previews a subscription not yet saved on an event
// (POST /v1/filter-test): whether it matches, why not, and what a push
// would carry; nothing is created or published.
func (s *SubscriptionsService) FilterTestUnsaved(ctx context.Context, p FilterTestParams) (*FilterTestResult, error) {
	p.Event = p.Event.withSpecVersion()
	return doJSON[FilterTestResult](ctx, s.c, call{op: opFilterTestUnsaved, body: p})
}

// JobsService calls /v1/jobs.
type JobsService struct{ c *Client }

// Get returns the job id and its progress (GET /v1/jobs/{id}).
func (s *JobsService) Get(ctx context.Context, id string) (*Job, error) {
	return doJSON[Job](ctx, s.c, call{op: opGetJob, ids: []string{id}})
}
