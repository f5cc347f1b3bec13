package enginetest

import "testing"

// RunAPIContract checks the reads the HTTP API makes (api.Store, in
// internal/api): the lists (pages in their order, bounded in items and
// bytes, with cursors of their own format) of accounts, keys, deliveries,
// attempts, dead letters, subscriptions and endpoints, and the queued
// deliveries of ListQueued; what each account sees of the others'
// (nothing); the counts /metrics shows and the Ping of /readyz.
func RunAPIContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Accounts", []test{
			{"DefaultExistsAndListsFirst", testAccountDefault},
			{"ListPages", testAccountList},
			{"InvalidCursors", testAccountCursors},
		}},
		{"Keys", []test{
			{"ListPerAccount", testKeyList},
		}},
		{"Lists", []test{
			{"DeliveriesPagination", testListDeliveriesPages},
			{"DeliveriesFilters", testListDeliveriesFilters},
			{"PendingWithLeased", testListPendingLeased},
			{"DeliveriesTimeRange", testListDeliveriesTimeRange},
			{"DeliveriesLimitClamp", testListDeliveriesClamp},
			{"AttemptsPagination", testListAttempts},
			{"DeadLetters", testListDeadLetters},
			{"DeadLettersBytes", testListDeadLettersBytes},
			{"DeliveriesBytes", testListDeliveriesBytes},
			{"AttemptsBytes", testListAttemptsBytes},
			{"SubscriptionsBytes", testListSubscriptionsBytes},
			{"EndpointsBytes", testListEndpointsBytes},
			{"InvalidCursors", testListInvalidCursors},
			{"EndpointPagesAndUnknownIDs", testEndpointList},
			{"EndpointsByState", testEndpointsByState},
		}},
		{"Queued", []test{
			{"ListQueued", testListQueued},
			{"ListQueuedBytes", testListQueuedBytes},
			{"ListQueuedLimitsAndCursors", testListQueuedLimitsAndCursors},
			{"ListQueuedByEndpoint", testListQueuedByEndpoint},
		}},
		// Tenant isolation: everything belongs to one account, and what
		// one account does never shows in another's lists.
		{"Tenants", []test{
			{"DeliveriesPerAccount", testTenantDeliveries},
			{"DeadLettersPerAccount", testTenantDeadLetters},
			{"SubscriptionsPerAccount", testTenantSubscriptions},
			{"EndpointsPerAccount", testTenantEndpoints},
		}},
		{"Counts", []test{
			{"CountPendingByLane", testCountPending},
			{"CountQueued", testCountQueued},
			{"CountBacklogUpToLimit", testCountBacklog},
			{"CountPendingOfEndpoints", testCountPendingOf},
			{"Ping", testPing},
		}},
	})
}
