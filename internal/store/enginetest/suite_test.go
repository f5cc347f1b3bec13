// Package enginetest is the store engine's conformance suite
// (internal/store/engine), run against both drivers: SQLite and
// PostgreSQL (stores_test.go). It is test code only: nothing outside it
// runs it. The drivers' own checks, of what the engine asks of a driver,
// are internal/store/drivertest's.
//
// The checks are grouped by the contract of each consumer of the store: the
// interface it declares where it is used. Each contract has its own entry
// point, which Run calls in turn, and its own files (named after it):
//
//	RunAdmissionContract   publishing: Publish (admission*)
//	RunSchedulingContract  claims, leases, endpoint health (scheduling*)
//	RunRecordingContract   outcomes: Record (recording*)
//	RunControlContract     control.Store and handshake.Store: subscription, account and key writes, redelivery (control*)
//	RunQueueContract       queue.Store: Receive and Settle (queue*)
//	RunAPIContract         api.Store: lists and counts (api*)
//	RunCatalogContract     catalog.Source: SubscriptionChanges (catalog*)
//	RunAuthContract        auth.Store and the first admin key (auth*)
//	RunServerContract      the server's own: TryLead, Cleanup, Close (server*)
//	RunConsoleContract     console.Store: sessions (console*)
//	RunEventTypesContract  the event-type catalog: store.EventTypeStore (eventtypes*)
//	RunSourcesContract     broker sources: store.SourceStore (sources*)
//
// A check may use any method to set up and observe what it checks: a
// contract names what is checked, not all that is called.
//
// The suite checks behaviour through the store.Store interface only, with
// exact assertions. It assumes nothing a driver may do differently:
// times are compared at millisecond precision (attempt durations at
// microsecond precision), and leases are always given an Until far beyond
// every time the suite passes as now, so a store whose leases expire by time
// behaves like one whose leases do not.
//
// Beside Run, the checks of several stores on one database (a shared
// store's nodes): CheckClaimsDisjoint, CheckReceivesDisjoint,
// CheckSubscriptionLimit, CheckJobTurns and CheckJobLimit; Run calls all
// but CheckSubscriptionLimit with its one store. RunUpgrades checks that a
// store opened on the data of each earlier schema version reads it as
// written (upgrades_test.go writes them). Bench is the matching set of
// benchmarks (benchmarks_test.go runs it on both).
package enginetest

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
)

// Opener returns a new, empty store for the test it is given. The suite
// closes the store when that test ends (a second Close from the caller's
// own cleanup must be harmless).
type Opener = func(t *testing.T) store.Store

// Run runs every conformance test: each contract's, in turn, as a subtest
// named after it. Subtests of a group run in parallel.
func Run(t *testing.T, open Opener) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Opener)
	}{
		{"Admission", RunAdmissionContract},
		{"Scheduling", RunSchedulingContract},
		{"Recording", RunRecordingContract},
		{"Control", RunControlContract},
		{"Queue", RunQueueContract},
		{"API", RunAPIContract},
		{"Catalog", RunCatalogContract},
		{"Auth", RunAuthContract},
		{"Server", RunServerContract},
		{"Console", RunConsoleContract},
		{"EventTypes", RunEventTypesContract},
		{"Sources", RunSourcesContract},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open) })
	}
}

// group is a named list of tests, run as a subtest of its contract.
type group struct {
	name  string
	tests []test
}

// test is one check, given its own store (setup).
type test struct {
	name string
	fn   func(t *testing.T, b *bundle)
}

// runGroups runs each group as a subtest, and each of its tests as a
// parallel subtest of the group's with a fresh store from open.
func runGroups(t *testing.T, open Opener, groups []group) {
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.fn(t, setup(t, open))
				})
			}
		})
	}
}

// attemptDuration has a microsecond part: backends keep durations to the
// microsecond.
const attemptDuration = 1234567 * time.Microsecond

// failed is the outcome of failed attempt number n (also the budget's n-th)
// started at `started`, to be retried at next. The budget's first failure
// is the end of attempt 1.
func failed(id string, n int, started, firstFailure, next time.Time) store.Outcome {
	return store.Outcome{
		Attempt: delivery.Attempt{
			DeliveryID: id, Number: n, StartedAt: started, Duration: attemptDuration,
			StatusCode: 503, Outcome: "http_503", Error: "service unavailable",
			ResponseBody: []byte("busy\x00\xff"),
		},
		Status: delivery.StatusPending, Attempts: n, RoundAttempts: n,
		FirstFailure: firstFailure, NextAttemptAt: next,
		LastStatusCode: 503, LastOutcome: "http_503",
	}
}

// succeeded is the outcome of successful attempt number n.
func succeeded(id string, n int, started time.Time) store.Outcome {
	return store.Outcome{
		Attempt: delivery.Attempt{
			DeliveryID: id, Number: n, StartedAt: started, Duration: attemptDuration,
			StatusCode: 200, Outcome: "http_200", ResponseBody: []byte("ok"),
		},
		Status: delivery.StatusDelivered, Attempts: n, RoundAttempts: n,
		LastStatusCode: 200, LastOutcome: "http_200",
		DeliveredAt: started.Add(1234 * time.Millisecond),
	}
}

// deadLettered is the outcome of attempt n that exhausts the budget.
func deadLettered(id string, n int, started, firstFailure time.Time) store.Outcome {
	o := failed(id, n, started, firstFailure, time.Time{})
	o.Attempt.StatusCode, o.Attempt.Outcome, o.Attempt.Error = 400, "http_400", ""
	o.Status, o.LastStatusCode, o.LastOutcome = delivery.StatusDeadLettered, 400, "http_400"
	o.DeadLetterReason = "NonRetriableStatus"
	return o
}

// norm returns v with every time.Time field (at any depth of structs,
// slices and pointers to structs) converted to UTC, so that
// reflect.DeepEqual compares instants. What a pointer points to is
// normalised in place.
func norm[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	normValue(rv)
	return v
}

var timeType = reflect.TypeOf(time.Time{})

func normValue(v reflect.Value) {
	switch {
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		if t.IsZero() {
			v.Set(reflect.ValueOf(time.Time{}))
		} else {
			v.Set(reflect.ValueOf(t.UTC()))
		}
	case v.Kind() == reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				normValue(v.Field(i))
			}
		}
	case v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct:
		if !v.IsNil() {
			normValue(v.Elem())
		}
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		for i := 0; i < v.Len(); i++ {
			normValue(v.Index(i))
		}
	}
}

// equal fails the test unless got and want are deeply equal after norm.
func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	g, w := norm(got), norm(want)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got: %+v\nwant: %+v", what, g, w)
	}
}

// ids of claimed deliveries, in order.
func claimedIDs(cs []store.Claimed) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func deliveryIDs(ds []delivery.Delivery) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func sortedCopy(s []string) []string {
	c := append([]string{}, s...)
	sort.Strings(c)
	return c
}

// reversed returns s in reverse order.
func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// pendingDelivery is the state Publish gives a delivery of ev.
func pendingDelivery(ev store.NewEvent, i int, seq int64) delivery.Delivery {
	d := ev.Deliveries[i]
	return delivery.Delivery{
		ID: d.ID, AccountID: account.OrDefault(ev.AccountID), SubscriptionID: d.SubscriptionID, EndpointID: d.EndpointID,
		EventSeq: seq, EventID: ev.ID, EventSource: ev.Source,
		Status:     delivery.StatusPending,
		RoundStart: ev.PublishedAt, NextAttemptAt: ev.PublishedAt, CreatedAt: ev.PublishedAt,
	}
}
