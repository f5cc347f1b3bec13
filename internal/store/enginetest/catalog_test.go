package enginetest

import "testing"

// RunCatalogContract checks what the subscription catalog asks of the
// store (catalog.Source, in internal/catalog): SubscriptionChanges lets
// every node's copy of the subscriptions catch up incrementally, from the
// catalog version it has, or whole when the deletions it missed are
// forgotten.
func RunCatalogContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Changes", []test{
			{"ChangesAreIncremental", testCatalogChanges},
			{"CleanupForgetsOldDeletions", testCleanupPrunesTombstones},
		}},
	})
}
