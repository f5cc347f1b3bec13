package enginetest

import "testing"

// RunRecordingContract checks what recording outcomes asks of the store
// (the recording stage's Store: Record): Record logs each attempt and
// applies the delivery's new state while its lease holds; writes, with a
// dead-lettering outcome, the copy for the subscription's dead-letter URL;
// and, under the queue failure policy, deactivates the subscription; and
// adds what applied to the delivery rollups (stats.go).
func RunRecordingContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
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
		// URL (subscription.DeliveryOptions.DeadLetterURL): Record writes it with the
		// dead-lettering outcome (Outcome.DeadLetterCopy), ClaimDue hands
		// it out with the dead-lettered delivery (Claimed.DeadLetter).
		// Its endpoint's life is control's.
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
		{"Stats", []test{
			{"CountsAcrossCommits", testStatsCounts},
			{"Percentiles", testStatsPercentiles},
			{"AcknowledgeCountsDelivered", testStatsAcknowledge},
			{"DeleteOld", testStatsDeleteOld},
		}},
	})
}
