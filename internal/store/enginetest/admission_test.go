package enginetest

import "testing"

// RunAdmissionContract checks what the publish path asks of the store (the
// admission stage's Store: Publish): Publish durably writes events with
// their deliveries (pending, leased to the caller, or queued), once per
// (account, source, id); refuses a publish matched against subscriptions
// that changed since (the catalog guard); and group-commits concurrent
// calls so that one failing call fails alone.
func RunAdmissionContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Publish", []test{
			{"StoresEventsAndDeliveries", testPublishStores},
			{"DuplicateAcrossCalls", testPublishDuplicateAcrossCalls},
			{"DuplicateWithinCall", testPublishDuplicateWithinCall},
			{"SameIDOtherSourceIsNew", testPublishSameIDOtherSource},
			{"ClaimedAreLeased", testPublishClaimed},
			{"SequencesInInputOrder", testPublishSeqInputOrder},
			{"Empty", testPublishEmpty},
			{"CanceledBeforeQueueing", testPublishCanceled},
			{"PublishQueued", testQueuePublish},
			{"DedupPerAccount", testTenantDedup},
			{"SchemaErrors", testPublishSchemaErrors},
		}},
		// The publish guard: a publish checks, in its own transaction,
		// that it matched current subscriptions.
		{"Guard", []test{
			{"PublishGuardedByVersion", testPublishGuardVersion},
			{"PublishGuardedBySubscriptions", testPublishGuardSubscriptions},
			{"DeleteRacingPublishesLeavesNothingPending", testDeleteRacingPublishes},
		}},
		{"GroupCommit", []test{
			{"ConcurrentPublish", testConcurrentPublish},
			{"ConcurrentMixedWrites", testConcurrentMixed},
			{"FailedPublishFailsAlone", testFailedPublishFailsAlone},
		}},
	})
}
