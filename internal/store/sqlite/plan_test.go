package sqlite

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/driver"
	"github.com/herald-events/herald/internal/store/engine"
)

// plan returns EXPLAIN QUERY PLAN's detail lines for q.
func plan(t *testing.T, s *Store, q string) string {
	t.Helper()
	// ?1, ?2, …: as many as the largest, and one more for each anonymous ?
	// (a composed list's base numbers its own after its conditions').
	m := numbered.FindAllStringSubmatch(q, -1)
	most := 0
	for _, p := range m {
		v, _ := strconv.Atoi(p[1])
		most = max(most, v)
	}
	n := most + strings.Count(q, "?") - len(m)
	args := make([]any, n)
	for i := range args {
		args[i] = "x"
	}
	rows, err := s.readDB.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", firstLine(q), err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	return strings.Join(lines, "\n")
}

// fullScan matches a plan step that reads a whole table or index.
var fullScan = regexp.MustCompile(`(?m)^SCAN (d|e|deliveries|events|attempts)\b`)

// TestQueryPlans pins the plan of every query that must stay an index seek
// however many deliveries are stored (1,000,000 pending retries included).
func TestQueryPlans(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "herald.db"))
	for _, tc := range queryPlans {
		p := plan(t, s, tc.q)
		for _, w := range tc.want {
			if !strings.Contains(p, w) {
				t.Errorf("%s: plan lacks %q:\n%s", tc.name, w, p)
			}
		}
		if !tc.scan && fullScan.MatchString(p) {
			t.Errorf("%s: full scan:\n%s", tc.name, p)
		}
		if strings.Contains(p, "TEMP B-TREE FOR ORDER BY") {
			t.Errorf("%s: sorts:\n%s", tc.name, p)
		}
	}
	checkDeliveryListPlans(t, s)
	checkQueuedListPlans(t, s)
	checkDeadLetterListPlans(t, s)
	checkOrderingPlans(t, s)
}

// checkOrderingPlans: the claim and NextDue walk each lane's index (one
// arm each) and check a keyed delivery's head there with one seek each of
// deliveries_ordering and deliveries_ordering_leased; a subscription's
// deliveries of one ordering key are a seek of deliveries_ordering_all,
// newest first.
func checkOrderingPlans(t *testing.T, s *Store) {
	for _, name := range []driver.Query{"ClaimDue", "NextDue"} {
		p := plan(t, s, queries[name])
		for w, n := range map[string]int{
			"SEARCH d USING INDEX deliveries_fresh (endpoint_id=?":                                                              1,
			"SEARCH d USING INDEX deliveries_retry (endpoint_id=?":                                                              1,
			"SEARCH h USING COVERING INDEX deliveries_ordering (subscription_id=? AND ordering_key=? AND event_seq<?)":          2,
			"SEARCH l USING COVERING INDEX deliveries_ordering_leased (subscription_id=? AND ordering_key=? AND lease_until>?)": 2,
		} {
			if got := strings.Count(p, w); got != n {
				t.Errorf("%s: plan holds %q %d times, want %d:\n%s", name, w, got, n, p)
			}
		}
		if fullScan.MatchString(p) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: scans or sorts:\n%s", name, p)
		}
	}
	for _, f := range []store.DeliveryFilter{
		{SubscriptionID: "sub_x", OrderingKey: "k"},
		{SubscriptionID: "sub_x", OrderingKey: "k", AccountID: "acc_x", Status: delivery.StatusPending},
	} {
		q, text := listStatement(t, f, false, false)
		p := plan(t, s, text)
		if !strings.Contains(p, "USING INDEX deliveries_ordering") || fullScan.MatchString(p) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s:\n%s", q, p)
		}
	}
}

// listStatement returns the statement of a page of the deliveries f
// selects (engine.DeliveryPage), with their events when withEvent, for
// the sizes or the rows, as the driver composes it from its queries.
func listStatement(t *testing.T, f store.DeliveryFilter, withEvent, sizes bool) (driver.Query, string) {
	t.Helper()
	q, rows, _ := engine.DeliveryPage(f, withEvent)
	if !sizes {
		q = rows
	}
	text, err := queries.SQL(q)
	if err != nil {
		t.Fatal(err)
	}
	return q, text
}

// queryPlans are TestQueryPlans' queries with what their plans must hold.
var queryPlans = []struct {
	name string
	q    string
	want []string // substrings of the plan
	scan bool     // a full scan is expected (and fine)
}{
	// GET /v1/subscriptions?name=: the (account_id, name) unique index.
	{name: "SubscriptionByName", q: queries["SubscriptionByName"], want: []string{"SEARCH subscriptions USING INDEX", "(account_id=? AND name=?)"}},
	// GET /v1/endpoints?state=: the account's endpoints_account index (or,
	// of every account, the primary key) in ID order, the state a filter
	// on that walk (an account has one endpoint per subscription URL).
	{name: "EndpointsByState", q: queries["ListEndpoints"], want: []string{"SEARCH endpoints USING INDEX endpoints_account (account_id=? AND id>?)"}},
	{name: "EndpointsByStateAll", q: queries["ListAllEndpoints"], want: []string{"SEARCH endpoints USING PRIMARY KEY (id>?)"}},
	// A redrive's look (engine/redrive.go): all of a subscription's dead
	// letters from its status index; among ids, each id by a key (the
	// subscription's index, or the primary key); then their restart, each
	// by the primary key.
	{name: "RedriveAllLook", q: queries["RedriveAllLook"], want: []string{"SEARCH deliveries USING INDEX deliveries_subscription_status (subscription_id=? AND status=?)"}},
	{name: "RedriveIDsLook", q: queries["RedriveIDsLook"], want: []string{"SEARCH deliveries USING INDEX deliveries_subscription (subscription_id=? AND id=?)"}},
	{name: "RedriveAccountIDsLook", q: queries["RedriveAccountIDsLook"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	{name: "RestartDeliveries", q: queries["RestartDeliveries"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	// A recover job's count and look: a range of the subscription's
	// entries of one status, from the partial status index.
	{name: "CountRecover", q: queries["CountRecover"], want: []string{"USING COVERING INDEX deliveries_subscription_status (subscription_id=? AND status=? AND id>? AND id<?)"}},
	{name: "RecoverLook", q: queries["RecoverLook"], want: []string{"USING INDEX deliveries_subscription_status (subscription_id=? AND status=? AND id>? AND id<?)"}},
	// The writer (engine/publish.go, record.go): each outcome's delivery
	// by key, each dead letter's too, each stored event by its key.
	{name: "ApplyOutcomes", q: queries["ApplyOutcomes"], want: []string{"SEARCH d USING PRIMARY KEY (id=?)"}},
	{name: "InsertDeadLetterCopies", q: queries["InsertDeadLetterCopies"], want: []string{"SEARCH d USING PRIMARY KEY (id=?)"}},
	{name: "EventSeqs", q: queries["EventSeqs"], want: []string{"SEARCH e USING COVERING INDEX sqlite_autoindex_events_1 (id=? AND source=? AND account_id=?)"}},
	{name: "MissingDeliveries", q: queries["MissingDeliveries"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	// The rollups: an account's minutes by delivery_stats_account; the
	// oldest by the primary key.
	{name: "DeliveryStats", q: queries["DeliveryStats"], want: []string{"SEARCH delivery_stats USING INDEX delivery_stats_account (account_id=? AND minute>? AND minute<?)"}},
	{name: "DeliveryStatsAll", q: queries["DeliveryStatsAll"], want: []string{"SEARCH delivery_stats USING PRIMARY KEY (minute>? AND minute<?)"}},
	{name: "DeleteOldStats", q: queries["DeleteOldStats"], want: []string{"SEARCH delivery_stats USING PRIMARY KEY (minute<?)"}},
	// The queue (engine/queue.go): a subscription's receivable deliveries
	// in due order from deliveries_queued; the locks, ends and settles of
	// deliveries by key; an acknowledgement's rollups by key.
	{name: "Receivable", q: queries["Receivable"], want: []string{"SEARCH d USING INDEX deliveries_queued (subscription_id=? AND next_attempt_at<?)"}},
	{name: "LockReceived", q: queries["LockReceived"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	{name: "EndReceived", q: queries["EndReceived"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	{name: "SettleAcknowledge", q: queries["SettleAcknowledge"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	{name: "SettleRelease", q: queries["SettleRelease"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	{name: "SettleReject", q: queries["SettleReject"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	{name: "SettleRenew", q: queries["SettleRenew"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	{name: "AddAcknowledgedStats", q: queries["AddAcknowledgedStats"], want: []string{"SEARCH d USING PRIMARY KEY (id=?)"}},
	// The jobs: an account's running ones counted on jobs_account, the
	// finished ones found on jobs_finished; a turn is forgotten after a
	// seek of jobs_account (of every account with a turn).
	{name: "CountRunningJobs", q: queries["CountRunningJobs"], want: []string{"SEARCH jobs USING COVERING INDEX jobs_account (account_id=? AND state=?)"}},
	{name: "DeleteFinishedJobs", q: queries["DeleteFinishedJobs"], want: []string{"SEARCH jobs USING INDEX jobs_finished (finished_at<?)"}},
	{name: "ForgetTurns", q: queries["ForgetTurns"], want: []string{"SEARCH jobs USING COVERING INDEX jobs_account (account_id=?)"}},
	// A claim's leases, the dead-lettered deliveries of the dead letters
	// it claimed, Release and ExtendLeases: each delivery of the list by
	// the primary key.
	{name: "LeaseClaimed", q: queries["LeaseClaimed"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	{name: "ClaimDeadLetters", q: queries["ClaimDeadLetters"], want: []string{"SEARCH d USING PRIMARY KEY (id=?)", "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"}},
	{name: "ReleaseLeases", q: queries["ReleaseLeases"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
	{name: "ExtendLeases", q: queries["ExtendLeases"], want: []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}},
}

// The filters of a delivery list, as bits of a mask, with a cursor and
// for the sizes or the rows of a page.
const (
	bySubscription = 1 << iota
	byStatus
	byEvent
	byAccount
	withCursor
	sizes
	byTime
)

// checkDeliveryListPlans checks the plan of every combination of delivery
// filters, with and without a cursor, for the sizes and for the rows of a
// page: for each status the status indexes hold, and delivered, which
// they leave out (its lists walk the subscription's or account's index).
func checkDeliveryListPlans(t *testing.T, s *Store) {
	for _, st := range []delivery.Status{delivery.StatusPending, delivery.StatusDeadLettered, delivery.StatusDelivered} {
		for mask := 0; mask < byTime<<1; mask++ {
			var f store.DeliveryFilter
			if mask&bySubscription != 0 {
				f.SubscriptionID = "sub_x"
			}
			if mask&byStatus != 0 {
				f.Status = st
			}
			if mask&byEvent != 0 {
				f.EventID = "e"
			}
			if mask&byAccount != 0 {
				f.AccountID = "acc_x"
			}
			if mask&byTime != 0 {
				f.Since, f.Before = time.UnixMilli(1_700_000_000_000), time.UnixMilli(1_700_000_060_000)
			}
			if mask&withCursor != 0 {
				f.Page.Cursor = "dlv_x"
			}
			q, text := listStatement(t, f, false, mask&sizes != 0)
			full := plan(t, s, text)
			p, leased := leftArms(full)
			if !leased || !deliveryListIndexOK(p, f, mask) || !deliveryListWalkOK(p, f, q, mask) {
				t.Errorf("%s:\n%s", q, full)
			}
		}
	}
}

// deliveryListIndexOK reports whether a delivery list's plan p reads the
// index its filters have: an account alone, or with a status, its own
// index; with a subscription, the subscription's.
func deliveryListIndexOK(p string, f store.DeliveryFilter, mask int) bool {
	account := mask&(byAccount|bySubscription|byEvent) == byAccount
	switch {
	case account && (f.Status == "" || f.Status == delivery.StatusDelivered):
		return strings.Contains(p, "SEARCH d USING INDEX deliveries_account (account_id=?")
	case account:
		return strings.Contains(p, "SEARCH d USING INDEX deliveries_account_status (account_id=? AND status=?")
	case f.SubscriptionID != "" && f.EventID == "" && strings.Contains(p, "deliveries_account"):
		return false // the account's index rather than the subscription's
	case f.SubscriptionID != "" && f.EventID == "" && f.Status == delivery.StatusDelivered:
		return strings.Contains(p, "SEARCH d USING INDEX deliveries_subscription (subscription_id=?")
	case f.SubscriptionID != "" && f.EventID == "" && f.Status != "":
		return strings.Contains(p, "SEARCH d USING INDEX deliveries_subscription_status (subscription_id=? AND status=?")
	}
	return true
}

// leftArms returns plan p without the right arm of each merge (MERGE
// (UNION ALL)) it holds, and whether each such arm reads the leased
// deliveries by a seek of deliveries_leased: the Open… lists read the
// deliveries not leased in the left arm, in list order, and the leased
// ones (pending only, the in-flight few) in the right, which may sort an
// account's (0021_leased_apart.sql).
func leftArms(p string) (string, bool) {
	var kept []string
	ok, right, seek := true, false, false
	for _, line := range strings.Split(p, "\n") {
		switch {
		case line == "RIGHT":
			right, seek = true, false
			continue
		case right && (line == "MERGE (UNION ALL)" || strings.HasPrefix(line, "SCAN (subquery") || strings.HasPrefix(line, "CO-ROUTINE")):
			right, ok = false, ok && seek
		case right:
			seek = seek || leasedSeek.MatchString(line)
			continue
		}
		kept = append(kept, line)
	}
	if right {
		ok = ok && seek
	}
	return strings.Join(kept, "\n"), ok
}

// leasedSeek matches a seek of deliveries_leased by status.
var leasedSeek = regexp.MustCompile(`SEARCH d USING (COVERING )?INDEX deliveries_leased \(status=\?`)

// deliveryListWalkOK reports whether a delivery list's plan p reads its
// rows as its filters allow: an event id's deliveries through the events
// with that id; with no filter (or a status across every account, which
// the API never asks for, filtering that walk) newest first in
// primary-key order, stopping at the limit; otherwise never a full scan
// or a sort.
func deliveryListWalkOK(p string, f store.DeliveryFilter, q driver.Query, mask int) bool {
	switch {
	case f.EventID != "":
		// The events with that id, then their few deliveries (only the
		// index for the sizes), sorted.
		return strings.Contains(p, "SEARCH e USING COVERING INDEX sqlite_autoindex_events_1 (id=?)") &&
			regexp.MustCompile(`SEARCH d USING (COVERING )?INDEX deliveries_event \(event_seq=\?`).MatchString(p)
	case strings.Contains(string(q), " WHERE ") && mask&(byAccount|bySubscription) == 0 && f.Status != "":
		return walksByID(p)
	case !strings.Contains(string(q), " WHERE "):
		return p == "SCAN d\nSEARCH e USING INTEGER PRIMARY KEY (rowid=?)"
	}
	return !fullScan.MatchString(p) && !strings.Contains(p, "TEMP B-TREE")
}

// checkQueuedListPlans: an endpoint's queued deliveries, of an account or
// not, of a subscription or not: the partial index by endpoint (or, with a
// subscription, one of the subscription's), never a scan or a sort.
func checkQueuedListPlans(t *testing.T, s *Store) {
	for mask := 0; mask < 16; mask++ {
		f := store.DeliveryFilter{EndpointID: "ep_x", Status: delivery.StatusQueued}
		if mask&1 != 0 {
			f.AccountID = "acc_x"
		}
		if mask&2 != 0 {
			f.SubscriptionID = "sub_x"
		}
		if mask&4 != 0 {
			f.Page.Cursor = "dlv_x"
		}
		q, text := listStatement(t, f, false, mask&8 != 0)
		full := plan(t, s, text)
		p, leased := leftArms(full)
		if !leased || fullScan.MatchString(p) || strings.Contains(p, "TEMP B-TREE") ||
			f.SubscriptionID == "" && !strings.Contains(p, "SEARCH d USING INDEX deliveries_queued_endpoint (endpoint_id=?") {
			t.Errorf("%s:\n%s", q, p)
		}
	}
}

// checkDeadLetterListPlans: a subscription's dead letters are a seek of
// its status index, an account's of the account's; every account's walk
// the deliveries newest first by primary key (the API never asks).
func checkDeadLetterListPlans(t *testing.T, s *Store) {
	for _, f := range []store.DeadLetterFilter{{}, {SubscriptionID: "sub_x"}, {AccountID: "acc_x"}, {AccountID: "acc_x", SubscriptionID: "sub_x"}} {
		want := ""
		switch {
		case f.SubscriptionID != "":
			want = "deliveries_subscription_status (subscription_id=? AND status=?"
		case f.AccountID != "":
			want = "deliveries_account_status (account_id=? AND status=?"
		}
		// ListDeadLetters' filter, after a cursor.
		df := store.DeliveryFilter{AccountID: f.AccountID, SubscriptionID: f.SubscriptionID, Status: delivery.StatusDeadLettered,
			Page: store.Page{Cursor: "dlv_x"}}
		for _, sizes := range []bool{false, true} {
			q, text := listStatement(t, df, true, sizes)
			full := plan(t, s, text)
			if want == "" {
				if !walksByID(full) {
					t.Errorf("%s:\n%s", q, full)
				}
				continue
			}
			p, leased := leftArms(full)
			if !leased || fullScan.MatchString(p) || strings.Contains(p, "TEMP B-TREE") || !strings.Contains(p, "SEARCH d USING INDEX "+want) {
				t.Errorf("%s:\n%s", q, full)
			}
		}
	}
}

// walksByID reports whether a plan reads deliveries newest first in
// primary-key order (from the start, or from a cursor, or over a time
// range), without sorting.
func walksByID(p string) bool {
	return (strings.HasPrefix(p, "SCAN d") || strings.HasPrefix(p, "SEARCH d USING PRIMARY KEY (id<?)") ||
		strings.HasPrefix(p, "SEARCH d USING PRIMARY KEY (id>? AND id<?)")) && !strings.Contains(p, "TEMP B-TREE")
}
