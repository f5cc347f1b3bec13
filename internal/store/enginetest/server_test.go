package enginetest

import "testing"

// RunServerContract checks what the server asks of the store for its own
// work (internal/server): TryLead keeps the cluster-wide roles, Cleanup
// deletes old finished events and DeleteFinishedJobs old finished jobs,
// Close ends the store.
func RunServerContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Leaders", []test{
			{"TryLead", testTryLead},
			{"TryLeadRolesIndependent", testTryLeadRoles},
		}},
		{"Cleanup", []test{
			{"OnlyOldFinishedEvents", testCleanup},
			{"OnlyOldFinishedJobs", testDeleteFinishedJobs},
			{"FinishedJobsForgetTurns", testDeleteFinishedJobsForgetsTurns},
		}},
		{"Lifecycle", []test{
			{"Closed", testClosed},
		}},
	})
}
