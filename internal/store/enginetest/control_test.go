package enginetest

import "testing"

// RunControlContract checks the writes the control service makes
// (control.Store, in internal/control; and handshake.Store, its
// GetSubscription and UpdateSubscription): subscription writes, each with
// the endpoint rows of its URLs (an endpoint lives while a subscription
// uses its URL) and what happens to the subscription's deliveries;
// Redeliver and Redrive; ReactivateSubscription and DeactivateSubscription;
// account and key writes.
func RunControlContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Accounts", []test{
			{"CreateGetUpdate", testAccountRoundTrip},
			{"NameTakenAndIDConflict", testAccountConflicts},
			{"NotFound", testAccountNotFound},
			{"Delete", testAccountDelete},
			{"DeleteRefused", testAccountDeleteRefused},
		}},
		{"Keys", []test{
			{"CreateGetDelete", testKeyRoundTrip},
			{"Conflicts", testKeyConflicts},
		}},
		{"Subscriptions", []test{
			{"CreateGetRoundTrip", testSubscriptionRoundTrip},
			{"NameTaken", testSubscriptionNameTaken},
			{"Update", testSubscriptionUpdate},
			{"NotFound", testSubscriptionNotFound},
			{"ByName", testSubscriptionByName},
			{"ListAndAll", testSubscriptionList},
			{"DeleteDropsPendingAndQueued", testSubscriptionDelete},
			{"SubscriptionNamesPerAccount", testTenantNames},
			{"SubscriptionStaysInItsAccount", testTenantUpdateKeepsAccount},
		}},
		{"EndpointLifetime", []test{
			{"DeleteRemovesUnusedEndpoint", testDeleteRemovesUnusedEndpoint},
			{"MoveRemovesUnusedEndpoint", testMoveRemovesUnusedEndpoint},
			{"RecreatedEndpointIsNew", testRecreatedEndpointIsNew},
			{"NoEndpointLeftBehind", testNoEndpointLeftBehind},
			{"PullSubscriptionHasNoEndpoint", testPullNoEndpoint},
		}},
		{"Redeliver", []test{
			{"DeadLetteredGetsFreshBudget", testRedeliverDeadLettered},
			{"Delivered", testRedeliverDelivered},
			{"ConflictWhenLeased", testRedeliverConflict},
			{"NotFound", testRedeliverNotFound},
			{"RedriveAll", testRedriveAll},
			{"RedriveIDs", testRedriveIDs},
			{"RedriveIDsAlone", testRedriveIDsAlone},
			{"RedriveUnknownSubscription", testRedriveUnknown},
			{"RedriveMovedSubscription", testRedriveMovedSubscription},
			{"RedeliverOfDeletedSubscription", testRedeliverDeletedSubscription},
		}},
		{"Recover", []test{
			{"Range", testRecoverRange},
			{"Lease", testRecoverLease},
			{"Turns", testRecoverTurns},
			{"Limit", testJobLimit},
		}},
		{"Reactivate", []test{
			{"Reactivate", testReactivate},
			{"DeactivateByHand", testDeactivateByHand},
			{"DeactivateByHandRefused", testDeactivateByHandRefused},
		}},
		// A subscription's dead-letter URL: its endpoint row lives while
		// a subscription names it, and its dead letters follow it.
		{"DeadLetterURLs", []test{
			{"EndpointLivesWithTheURL", testDeadLetterEndpointLife},
			{"SharedURL", testDeadLetterSharedURL},
			{"MovesWithTheURL", testDeadLetterMove},
			{"RemovedURLDrops", testDeadLetterURLRemoved},
			{"RedeliverAndRedrive", testDeadLetterRedeliver},
			{"Reactivate", testDeadLetterReactivate},
			{"ConcurrentURLChanges", testDeadLetterConcurrentChanges},
		}},
	})
}
