package enginetest

import "testing"

// RunSchedulingContract checks what scheduling deliveries asks of the
// store (the scheduling stage's Store): ClaimDue leases due deliveries,
// fresh before retries, to one claimer at a time; DueEndpoints and NextDue
// say when; Release and ExtendLeases give back and keep leases;
// GetEndpoint, EndpointChanges, ModifyEndpoints and TakeProbe keep
// endpoint health and rate limits; a shared store's TakeTokens hands out
// their tokens.
func RunSchedulingContract(t *testing.T, open Opener) {
	runGroups(t, open, []group{
		{"Claim", []test{
			{"FreshBeforeRetry", testClaimFreshBeforeRetry},
			{"EachLaneInDueOrder", testClaimLaneOrder},
			{"NotBeforeDue", testClaimNotBeforeDue},
			{"Limit", testClaimLimit},
			{"NeverLeasedOrOtherEndpoints", testClaimNeverLeased},
			{"CarriesEvent", testClaimCarriesEvent},
			{"CarriesTraceContext", testClaimTraceContext},
			{"DueEndpointsAndNextDue", testDueEndpoints},
			{"Release", testRelease},
			{"ReleaseOtherOwner", testReleaseOtherOwner},
			{"ExtendLeases", testExtendLeases},
			{"ExtendLeasesMovesLease", testExtendLeasesMoves},
			{"ConcurrentClaimsDisjoint", testConcurrentClaimsDisjoint},
			{"KeyHeads", testClaimKeyHeads},
			{"KeyLeaseHolds", testClaimKeyLeaseHolds},
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
			{"rate limits round-trip", testRateLimitRoundTrip},
			{"shared buckets", testSharedBuckets},
		}},
	})
}
