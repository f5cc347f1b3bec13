package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/store/sqlrow"
)

// plan returns EXPLAIN QUERY PLAN's detail lines for q.
func plan(t *testing.T, s *Store, q string) string {
	t.Helper()
	n := strings.Count(q, "?")
	if m := numbered.FindAllStringSubmatch(q, -1); m != nil { // ?1, ?2, …: as many as the largest
		n = 0
		for _, p := range m {
			v, _ := strconv.Atoi(p[1])
			n = max(n, v)
		}
	}
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

// numbered matches a numbered parameter.
var numbered = regexp.MustCompile(`\?(\d+)`)

// fullScan matches a plan step that reads a whole table or index.
var fullScan = regexp.MustCompile(`(?m)^SCAN (d|e|deliveries|events|attempts)\b`)

// TestQueryPlans pins the plan of every query that must stay an index seek
// however many deliveries are stored (1,000,000 pending retries included).
func TestQueryPlans(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "herald.db"))
	for _, tc := range []struct {
		name string
		q    string
		want []string // substrings of the plan
		scan bool     // a full scan is expected (and fine)
	}{
		{"ClaimDue fresh", claimFreshSQL, []string{"SEARCH d USING INDEX deliveries_fresh (endpoint_id=? AND next_attempt_at<?)", "SEARCH e USING INTEGER PRIMARY KEY"}, false},
		{"ClaimDue retry", claimRetrySQL, []string{"SEARCH d USING INDEX deliveries_retry (endpoint_id=? AND next_attempt_at<?)", "SEARCH e USING INTEGER PRIMARY KEY"}, false},
		{"NextDue", nextDueSQL, []string{"SEARCH d USING COVERING INDEX deliveries_fresh (endpoint_id=?)", "SEARCH d USING COVERING INDEX deliveries_retry (endpoint_id=?)"}, false},
		{"DueEndpoints", dueEndpointsSQL, []string{
			"SEARCH d USING COVERING INDEX deliveries_fresh (endpoint_id>?)", "SEARCH d USING COVERING INDEX deliveries_fresh (endpoint_id=?)",
			"SEARCH d USING COVERING INDEX deliveries_retry (endpoint_id>?)", "SEARCH d USING COVERING INDEX deliveries_retry (endpoint_id=?)"}, false},
		// Counting reads each lane's index, never the table.
		{"CountPending", countPendingSQL, []string{"SCAN d USING COVERING INDEX deliveries_fresh", "SCAN d USING COVERING INDEX deliveries_retry",
			"SEARCH d USING COVERING INDEX deliveries_leased"}, true},
		{"Release", releaseSQL, []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}, false},
		{"ExtendLeases", extendSQL, []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}, false},
		{"TakeProbe", takeProbeSQL, []string{"SEARCH endpoints USING PRIMARY KEY (id=?)"}, false},
		{"Record", recordStateSQL, []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}, false},
		{"GetDelivery", getDeliverySQL, []string{"SEARCH d USING PRIMARY KEY (id=?)", "SEARCH e USING INTEGER PRIMARY KEY"}, false},
		{"ListAttempts", listAttemptsSQL(sqlrow.AttemptCols), []string{"SEARCH attempts USING INDEX sqlite_autoindex_attempts_1 (delivery_id=? AND number>?)"}, false},
		{"ListAttempts sizes", listAttemptsSQL(sqlrow.AttemptBytes), []string{"SEARCH attempts USING INDEX sqlite_autoindex_attempts_1 (delivery_id=? AND number>?)"}, false},
		{"ListSubscriptions", listByIDSQL("subscriptions", subscriptionCols), []string{"SEARCH subscriptions USING PRIMARY KEY (id>?)"}, false},
		{"ListSubscriptions sizes", listByIDSQL("subscriptions", sqlrow.SubscriptionBytes), []string{"SEARCH subscriptions USING PRIMARY KEY (id>?)"}, false},
		{"ListEndpoints", listByIDSQL("endpoints", endpointCols), []string{"SEARCH endpoints USING PRIMARY KEY (id>?)"}, false},
		{"ListEndpoints sizes", listByIDSQL("endpoints", sqlrow.EndpointBytes), []string{"SEARCH endpoints USING PRIMARY KEY (id>?)"}, false},
		{"Redrive", redriveAllSQL, []string{"SEARCH deliveries USING INDEX deliveries_subscription_status (subscription_id=? AND status=?)"}, false},
		{"DeleteSubscription", dropSubscriptionDeliveriesSQL, []string{"SEARCH deliveries USING INDEX deliveries_subscription_status (subscription_id=? AND status=?)"}, false},
		{"Subscription move", moveDeliveriesSQL, []string{"SEARCH deliveries USING INDEX deliveries_subscription_status (subscription_id=? AND status=?)"}, false},
		{"Unused endpoint", deleteUnusedEndpointSQL, []string{"SEARCH endpoints USING PRIMARY KEY (id=?)", "SEARCH subscriptions USING COVERING INDEX subscriptions_endpoint (endpoint_id=?)",
			"SEARCH subscriptions USING COVERING INDEX subscriptions_dead_letter_endpoint (dead_letter_endpoint_id=?)"}, false},
		{"Dead-letter move", moveDeadLettersSQL, []string{"SEARCH deliveries USING INDEX deliveries_subscription_status (subscription_id=? AND status=?)"}, false},
		{"Dead-letter drop", dropDeadLettersSQL, []string{"SEARCH deliveries USING INDEX deliveries_subscription_status (subscription_id=? AND status=?)"}, false},
		// Record's dead letter: the dead-lettered delivery, its event and
		// its subscription, each by key.
		{"Record dead letter", insertDeadLetterSQL, []string{"SEARCH d USING PRIMARY KEY (id=?)", "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)",
			"SEARCH s USING PRIMARY KEY (id=?)"}, false},
		// ClaimDue reads a dead letter's dead-lettered delivery by key.
		{"ClaimDue dead letter", getDeliverySQL, []string{"SEARCH d USING PRIMARY KEY (id=?)", "SEARCH e USING INTEGER PRIMARY KEY"}, false},
		{"Redrive one", redriveOneSQL, []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}, false},
		{"Redeliver state", deliveryStateSQL, []string{"SEARCH d USING PRIMARY KEY (id=?)", "SEARCH s USING PRIMARY KEY (id=?)"}, false},
		{"Cleanup", cleanupSQL, []string{"SEARCH e USING COVERING INDEX events_published (published_at<?)", "SEARCH d USING INDEX deliveries_event (event_seq=?)"}, false},
		{"Cleanup recheck", unfinishedSQL, []string{"SEARCH deliveries USING INDEX deliveries_event (event_seq=?)"}, false},
		{"Cleanup deliveries", cleanupDeliveriesSQL, []string{"SEARCH deliveries USING INDEX deliveries_event (event_seq=?)"}, false},
		{"Cleanup events", cleanupEventSQL, []string{"SEARCH events USING INTEGER PRIMARY KEY (rowid=?)"}, false},
		{"Cleanup attempts", cleanupAttemptsSQL, []string{"SEARCH attempts USING COVERING INDEX sqlite_autoindex_attempts_1 (delivery_id=?)"}, false},
		{"Duplicate lookup", eventSeqSQL, []string{"SEARCH events USING COVERING INDEX sqlite_autoindex_events_1 (id=? AND source=? AND account_id=?)"}, false},
		{"ListSubscriptions of an account", listByAccountSQL("subscriptions", subscriptionCols), []string{"SEARCH subscriptions USING INDEX subscriptions_account (account_id=? AND id>?)"}, false},
		{"ListSubscriptions of an account, sizes", listByAccountSQL("subscriptions", sqlrow.SubscriptionBytes), []string{"SEARCH subscriptions USING INDEX subscriptions_account (account_id=? AND id>?)"}, false},
		{"ListEndpoints of an account", listByAccountSQL("endpoints", endpointCols), []string{"SEARCH endpoints USING INDEX endpoints_account (account_id=? AND id>?)"}, false},
		{"ListEndpoints of an account, sizes", listByAccountSQL("endpoints", sqlrow.EndpointBytes), []string{"SEARCH endpoints USING INDEX endpoints_account (account_id=? AND id>?)"}, false},
		{"Catalog changes", changedSubsSQL, []string{"SEARCH subscriptions USING INDEX subscriptions_version (version>?)"}, false},
		{"Catalog deletions", tombstonesSQL, []string{"SEARCH subscription_tombstones USING COVERING INDEX subscription_tombstones_version (version>?)"}, false},
		{"Subscriptions of an account", countSubscriptionsSQL, []string{"SEARCH subscriptions USING COVERING INDEX subscriptions_account (account_id=?)"}, false},
		{"Subscription name", subscriptionByNameSQL, []string{"SEARCH subscriptions USING INDEX sqlite_autoindex_subscriptions_2 (account_id=? AND name=?)"}, false},
		{"ListAccounts", listAccountsSQL(sqlrow.AccountCols), []string{"SEARCH accounts USING INDEX accounts_list (<expr>>?)"}, false},
		{"ListAccounts sizes", listAccountsSQL(sqlrow.AccountBytes), []string{"SEARCH accounts USING INDEX accounts_list (<expr>>?)"}, false},
		{"Account name", accountByNameSQL, []string{"SEARCH accounts USING INDEX sqlite_autoindex_accounts_2 (name=?)"}, false},
		{"DeleteAccount subscriptions", accountSubscribedSQL, []string{"SEARCH subscriptions USING COVERING INDEX subscriptions_account (account_id=?)"}, false},
		{"DeleteAccount keys", deleteAccountKeysSQL, []string{"SEARCH api_keys USING INDEX api_keys_account (account_id=?)"}, false},
		{"ListKeys", listByAccountSQL("api_keys", sqlrow.KeyCols), []string{"SEARCH api_keys USING INDEX api_keys_account (account_id=? AND id>?)"}, false},
		{"ListKeys sizes", listByAccountSQL("api_keys", sqlrow.KeyBytes), []string{"SEARCH api_keys USING INDEX api_keys_account (account_id=? AND id>?)"}, false},
		{"KeyByHash", keyByHashSQL, []string{"SEARCH api_keys USING INDEX sqlite_autoindex_api_keys_2 (hash=?)"}, false},
		{"Receive", receiveSQL, []string{"SEARCH d USING INDEX deliveries_queued (subscription_id=? AND next_attempt_at<?)", "SEARCH e USING INTEGER PRIMARY KEY"}, false},
		{"Receive lock", lockSQL, []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}, false},
		{"Receive end", endQueuedSQL, []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}, false},
		{"Receive NextAt", nextQueuedSQL, []string{"SEARCH d USING INDEX deliveries_queued (subscription_id=?)", "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"}, false},
		{"Settle acknowledge", acknowledgeSQL, []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}, false},
		{"Settle release", releaseLockSQL, []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}, false},
		{"Settle reject", rejectSQL, []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}, false},
		{"Settle renew", renewSQL, []string{"SEARCH deliveries USING PRIMARY KEY (id=?)"}, false},
		// Counting reads the partial index only: as many entries as queued deliveries.
		{"CountQueued", countQueuedSQL, []string{"SCAN d USING COVERING INDEX deliveries_queued"}, true},
		{"Deactivate", queuePendingSQL, []string{"SEARCH deliveries USING INDEX deliveries_subscription_status (subscription_id=? AND status=?)"}, false},
		{"ReactivateSubscription", unqueueSQL, []string{"SEARCH deliveries USING INDEX deliveries_"}, false},
	} {
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

	// Every combination of delivery filters, with and without a cursor, for
	// the sizes and for the rows of a page.
	const (
		bySubscription = 1 << iota
		byStatus
		byEvent
		byAccount
		withCursor
		sizes
	)
	// Each status the status indexes hold, and delivered, which they
	// leave out (its lists walk the subscription's or account's index).
	for _, st := range []delivery.Status{delivery.StatusPending, delivery.StatusDeadLettered, delivery.StatusDelivered} {
		for mask := 0; mask < sizes<<1; mask++ {
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
			where, _ := deliveryConds(f)
			if mask&withCursor != 0 {
				where = append(where, "d.id < ?")
			}
			cols := deliveryCols
			if mask&sizes != 0 {
				cols = sqlrow.DeliveryBytes
			}
			p := plan(t, s, listDeliveriesSQL(cols, where, f.EventID != ""))
			name := fmt.Sprintf("ListDeliveries %v (%s)", where, firstLine(cols))
			// An account alone, or with a status, has its own index; with a
			// subscription, the subscription's.
			account := mask&(byAccount|bySubscription|byEvent) == byAccount
			switch {
			case account && (f.Status == "" || f.Status == delivery.StatusDelivered):
				if !strings.Contains(p, "SEARCH d USING INDEX deliveries_account (account_id=?") {
					t.Errorf("%s:\n%s", name, p)
				}
			case account:
				if !strings.Contains(p, "SEARCH d USING INDEX deliveries_account_status (account_id=? AND status=?") {
					t.Errorf("%s:\n%s", name, p)
				}
			case f.SubscriptionID != "" && f.EventID == "" && strings.Contains(p, "deliveries_account"):
				t.Errorf("%s: the account's index rather than the subscription's:\n%s", name, p)
			case f.SubscriptionID != "" && f.EventID == "" && f.Status == delivery.StatusDelivered:
				if !strings.Contains(p, "SEARCH d USING INDEX deliveries_subscription (subscription_id=?") {
					t.Errorf("%s:\n%s", name, p)
				}
			case f.SubscriptionID != "" && f.EventID == "" && f.Status != "":
				if !strings.Contains(p, "SEARCH d USING INDEX deliveries_subscription_status (subscription_id=? AND status=?") {
					t.Errorf("%s:\n%s", name, p)
				}
			}
			switch {
			case f.EventID != "":
				// The events with that id, then their few deliveries (only
				// the index for the sizes), sorted.
				if !strings.Contains(p, "SEARCH e USING COVERING INDEX sqlite_autoindex_events_1 (id=?)") ||
					!regexp.MustCompile(`SEARCH d USING (COVERING )?INDEX deliveries_event \(event_seq=\?`).MatchString(p) {
					t.Errorf("%s:\n%s", name, p)
				}
			case len(where) == 0 || mask&(byAccount|bySubscription) == 0 && f.Status != "":
				// Newest first in primary-key order, stopping at the limit
				// (a status across every account, which the API never asks
				// for, filters that walk).
				if len(where) > 0 {
					if !walksByID(p) {
						t.Errorf("%s:\n%s", name, p)
					}
					continue
				}
				if p != "SCAN d\nSEARCH e USING INTEGER PRIMARY KEY (rowid=?)" {
					t.Errorf("%s:\n%s", name, p)
				}
			default:
				if fullScan.MatchString(p) || strings.Contains(p, "TEMP B-TREE") {
					t.Errorf("%s:\n%s", name, p)
				}
			}
		}
	}
	// An endpoint's queued deliveries, of an account or not, of a
	// subscription or not: the partial index by endpoint (or, with a
	// subscription, one of the subscription's), never a scan or a sort.
	for mask := 0; mask < 16; mask++ {
		f := store.DeliveryFilter{EndpointID: "ep_x", Status: delivery.StatusQueued}
		if mask&1 != 0 {
			f.AccountID = "acc_x"
		}
		if mask&2 != 0 {
			f.SubscriptionID = "sub_x"
		}
		where, _ := deliveryConds(f)
		if mask&4 != 0 {
			where = append(where, "d.id < ?")
		}
		cols := deliveryCols
		if mask&8 != 0 {
			cols = sqlrow.DeliveryBytes
		}
		p := plan(t, s, listDeliveriesSQL(cols, where, false))
		if fullScan.MatchString(p) || strings.Contains(p, "TEMP B-TREE") ||
			f.SubscriptionID == "" && !strings.Contains(p, "SEARCH d USING INDEX deliveries_queued_endpoint (endpoint_id=?") {
			t.Errorf("ListDeliveries %v (%s):\n%s", where, firstLine(cols), p)
		}
	}
	for _, f := range []store.DeadLetterFilter{{}, {SubscriptionID: "sub_x"}, {AccountID: "acc_x"}, {AccountID: "acc_x", SubscriptionID: "sub_x"}} {
		where, _ := deadLetterConds(f)
		want := ""
		switch {
		case f.SubscriptionID != "":
			want = "deliveries_subscription_status (subscription_id=? AND status=?"
		case f.AccountID != "":
			want = "deliveries_account_status (account_id=? AND status=?"
		}
		for _, cols := range []string{deliveryCols + ", " + eventCols, sqlrow.DeadLetterBytes} {
			p := plan(t, s, listDeliveriesSQL(cols, append(where, "d.id < ?"), false))
			if want == "" { // every account's: newest first by primary key (the API never asks)
				if !walksByID(p) {
					t.Errorf("ListDeadLetters %v (%s):\n%s", where, firstLine(cols), p)
				}
				continue
			}
			if fullScan.MatchString(p) || strings.Contains(p, "TEMP B-TREE") || !strings.Contains(p, "SEARCH d USING INDEX "+want) {
				t.Errorf("ListDeadLetters %v (%s):\n%s", where, firstLine(cols), p)
			}
		}
	}
}

// walksByID reports whether a plan reads deliveries newest first in
// primary-key order (from the start, or from a cursor), without sorting.
func walksByID(p string) bool {
	return (strings.HasPrefix(p, "SCAN d") || strings.HasPrefix(p, "SEARCH d USING PRIMARY KEY (id<?)")) && !strings.Contains(p, "TEMP B-TREE")
}
