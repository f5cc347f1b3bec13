package enginetest

import "testing"

// RunQueueContract checks what the consumers of queued deliveries ask of
// the store (queue.Store, in internal/queue): Receive locks receivable
// deliveries, oldest due first, bounded in count and bytes, never one
// under two live tokens; Settle acknowledges, releases, rejects or renews
// the locks; receives past MaxReceives or the TTL end the delivery.
func RunQueueContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Receive", []test{
			{"ReceiveOldestFirstUpToMax", testReceiveOrder},
			{"ReceiveBoundedInBytes", testReceiveBytes},
			{"ReceiveAnswerBytes", testReceiveAnswerBytes},
			{"ConcurrentReceivesDisjoint", testConcurrentReceivesDisjoint},
			{"LockExpiry", testLockExpiry},
			{"MaxReceives", testMaxReceives},
			{"TTL", testReceiveTTL},
		}},
		{"Settle", []test{
			{"Acknowledge", testAcknowledge},
			{"Release", testReleaseLock},
			{"Reject", testReject},
			{"Renew", testRenew},
			{"SettleExpiredLock", testSettleExpired},
			{"SettleOtherSubscription", testSettleOtherSubscription},
		}},
	})
}
