package storetest

import "testing"

// RunDispatchContract checks what the dispatcher asks of the store
// (dispatch.Store, in internal/dispatch): ClaimDue leases due deliveries,
// fresh before retries, to one claimer at a time; DueEndpoints and NextDue
// say when; Release and ExtendLeases give back and keep leases; Record
// applies outcomes under the lease (retries, dead letters with the copy
// for a dead-letter URL, a deactivation under the queue failure policy);
// GetEndpoint, EndpointChanges, ModifyEndpoints and TakeProbe keep
// endpoint health.
func RunDispatchContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Claim", []test{
			{"FreshBeforeRetry", testClaimFreshBeforeRetry},
			{"EachLaneInDueOrder", testClaimLaneOrder},
			{"NotBeforeDue", testClaimNotBeforeDue},
			{"Limit", testClaimLimit},
			{"NeverLeasedOrOtherEndpoints", testClaimNeverLeased},
			{"CarriesEvent", testClaimCarriesEvent},
			{"DueEndpointsAndNextDue", testDueEndpoints},
			{"Release", testRelease},
			{"ReleaseOtherOwner", testReleaseOtherOwner},
			{"ExtendLeases", testExtendLeases},
			{"ExtendLeasesMovesLease", testExtendLeasesMoves},
			{"ConcurrentClaimsDisjoint", testConcurrentClaimsDisjoint},
		}},
		{"Record", []test{
			{"Success", testRecordSuccess},
			{"Retry", testRecordRetry},
			{"DeadLetter", testRecordDeadLetter},
			{"DroppedStaysDropped", testRecordDropped},
			{"SameAttemptNumberReplaces", testRecordReplace},
			{"ManyOutcomesOneCall", testRecordMany},
			{"StaleLeaseOwnerOnlyLogs", testRecordStaleOwner},
			{"LeaseOwnerAfterRelease", testRecordOwnerReleased},
			{"SameDeliveryTwiceInOneCall", testRecordSameDeliveryTwice},
			{"ManyOutcomesMixed", testRecordManyMixed},
			{"InvalidOutcomeWritesNothing", testRecordInvalid},
		}},
		// The delivery of dead letters to a subscription's dead-letter
		// URL (store.DeliveryOptions.DeadLetterURL): Record writes it with
		// the dead-lettering outcome (Outcome.DeadLetterCopy), ClaimDue
		// hands it out with the dead-lettered delivery
		// (Claimed.DeadLetter). Its endpoint's life is control's.
		{"DeadLetters", []test{
			{"RecordWritesTheDeadLetter", testDeadLetterWritten},
			{"NoAttemptDueAtTheLastOne", testDeadLetterNoAttempt},
			{"WrittenOnlyWhenApplied", testDeadLetterNotWritten},
			{"FollowsTheSubscription", testDeadLetterFollowsSubscription},
			{"KeepsItsEvent", testDeadLetterKeepsEvent},
		}},
		{"Deactivation", []test{
			{"RecordQueuedDeactivates", testRecordDeactivates},
			{"DeactivateOnlyWithTheLease", testDeactivateGuarded},
		}},
		{"Endpoints", []test{
			{"new endpoints are enabled", testEndpointDefaults},
			{"health round-trips", testHealthRoundTrip},
			{"ModifyEndpoints sees current health", testModifySeesCurrent},
			{"ModifyEndpoints error writes nothing", testModifyError},
			{"ModifyEndpoints skips unknown IDs", testModifyUnknown},
			{"ModifyEndpoints serialises concurrent calls", testModifyConcurrent},
			{"TakeProbe", testTakeProbe},
			{"TakeProbe race has one winner", testTakeProbeRace},
			{"EndpointChanges", testEndpointChanges},
		}},
	})
}
