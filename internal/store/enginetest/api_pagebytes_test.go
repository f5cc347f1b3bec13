package enginetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/delivery"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/ids"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Tests of the page rule's byte bound (store.MaxPageBytes) on every list,
// and of the cursors each list accepts.

const mib = 1 << 20

// pageSizes are item sizes around the bound, in pages at limit 1000: three
// items of 1.5 MiB; one over the bound, alone; small items then large ones;
// two reaching the bound exactly; three where the first two are one byte
// short of it; the rest. Each is at least 100 bytes, more than an item's
// fields other than the one a test fills.
var pageSizes = []int{
	mib * 3 / 2, mib * 3 / 2, mib * 3 / 2,
	5 * mib,
	100, 200, 3 * mib, 2 * mib,
	store.MaxPageBytes - 100, 100,
	store.MaxPageBytes - 101, 100, 100,
	100, mib / 2,
}

// filler returns n bytes (at least 2) of JSON: a string of x.
func filler(n int) []byte {
	return []byte(`"` + strings.Repeat("x", n-2) + `"`)
}

// checkBounded lists with every limit in limits and checks the page rule
// (boundedPages) and that the list holds want, by key.
func checkBounded[T any](t *testing.T, what string, want []string, list func(store.Page) ([]T, string, error), bytes func(T) int64, key func(T) string) {
	t.Helper()
	for _, limit := range []int{1, 2, 3, 1000} {
		var got []string
		for _, v := range boundedPages(t, limit, list, bytes) {
			got = append(got, key(v))
		}
		equal(t, fmt.Sprintf("%s, limit %d", what, limit), got, want)
	}
}

func testListDeadLettersBytes(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	var want []string
	for i, n := range pageSizes {
		at := b.at(time.Duration(i) * time.Second)
		ev := sizedEvent(b, at, a, n)
		ev.Deliveries[0].Claimed = true
		b.publish(ev)
		id := ev.Deliveries[0].ID
		b.record(deadLettered(id, 1, at, at))
		want = append(want, id)
	}
	checkBounded(t, "dead letters", reversed(want), func(p store.Page) ([]store.DeadLetter, string, error) {
		return b.s.ListDeadLetters(b.ctx, store.DeadLetterFilter{SubscriptionID: a.ID, Page: p})
	}, withEventBytes(t, "dead letter"), func(d store.DeadLetter) string { return d.ID })
}

// sizedEvent returns an event published at `at` with a delivery to sub,
// whose bytes as an item listed with its event (a dead letter, a queued
// delivery: its id, source, type, subject and payload) are n: the payload
// makes up the rest.
func sizedEvent(b *bundle, at time.Time, sub subscription.Subscription, n int) store.NewEvent {
	ev := b.event(at, sub)
	ev.Payload = filler(n - len(ev.ID) - len(ev.Source) - len(ev.Type) - len(ev.Subject))
	return ev
}

// withEventBytes returns the bytes of an item listed with its event (see
// sizedEvent), failing the test for one (a what) listed without it.
func withEventBytes(t *testing.T, what string) func(store.DeadLetter) int64 {
	return func(d store.DeadLetter) int64 {
		e := d.Event
		if len(e.Payload) == 0 || e.ID != d.EventID {
			t.Fatalf("%s %s without its event", what, d.ID)
		}
		return int64(len(e.ID) + len(e.Source) + len(e.Type) + len(e.Subject) + len(e.Payload))
	}
}

// testListDeliveriesBytes: a delivery's bytes are its event's id and source.
// PostgreSQL indexes them, compressed, in at most 2,704 bytes: sources of
// 100 KiB of one letter fit, and 41 of them pass the bound.
func testListDeliveriesBytes(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	var want []string
	for i := 0; i < 50; i++ {
		ev := b.event(b.at(time.Duration(i)*time.Second), a)
		ev.Source = "/" + strings.Repeat(string(rune('a'+i%26)), 100<<10)
		b.publish(ev)
		want = append(want, ev.Deliveries[0].ID)
	}
	ds, next, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{Page: store.Page{Limit: 1000}})
	if err != nil || len(ds) != 41 || next != ds[40].ID {
		t.Fatalf("first page: %d deliveries, cursor %q, %v; want 41 and a cursor", len(ds), next, err)
	}
	checkBounded(t, "deliveries", reversed(want), func(p store.Page) ([]delivery.Delivery, string, error) {
		return b.s.ListDeliveries(b.ctx, store.DeliveryFilter{SubscriptionID: a.ID, Page: p})
	}, func(d delivery.Delivery) int64 { return int64(len(d.EventID) + len(d.EventSource)) },
		func(d delivery.Delivery) string { return d.ID })
}

// testListAttemptsBytes: an attempt's bytes are its error and response body.
func testListAttemptsBytes(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	ev, _ := b.claimOne(a, b.now)
	id := ev.Deliveries[0].ID
	var want []string
	for i, n := range pageSizes {
		num := i + 1
		at := b.at(time.Duration(num) * time.Minute)
		if num > 1 {
			b.claim(a.EndpointID, at, 1)
		}
		o := failed(id, num, at, b.at(time.Minute), at.Add(time.Minute))
		o.Attempt.Error = "attempt " + fmt.Sprint(num)
		o.Attempt.ResponseBody = filler(n - len(o.Attempt.Error))
		b.record(o)
		want = append(want, fmt.Sprint(num))
	}
	checkBounded(t, "attempts", want, func(p store.Page) ([]delivery.Attempt, string, error) {
		return b.s.ListAttempts(b.ctx, id, p)
	}, func(a delivery.Attempt) int64 { return int64(len(a.Error) + len(a.ResponseBody)) },
		func(a delivery.Attempt) string { return fmt.Sprint(a.Number) })
}

// subscriptionBytes is a subscription's bytes: its name, URL, event types,
// headers and secret headers (as stored: JSON), subject filters and retry
// policy.
func subscriptionBytes(t *testing.T, s subscription.Subscription) int64 {
	types, err := json.Marshal(s.EventTypes)
	if err != nil {
		t.Fatal(err)
	}
	headers, err := json.Marshal(s.Headers)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := json.Marshal(s.SecretHeaders)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(s.Name) + len(s.URL) + len(types) + len(s.SubjectBeginsWith) + len(s.SubjectEndsWith) +
		len(s.RetryPolicy) + len(headers) + len(secret))
}

func testListSubscriptionsBytes(t *testing.T, b *bundle) {
	var want []string
	for _, n := range pageSizes {
		s := b.sub("https://a.example/hook")
		s.Headers = map[string]string{"X-Big": ""}
		s.Headers["X-Big"] = strings.Repeat("x", n-int(subscriptionBytes(t, s)))
		if err := b.s.UpdateSubscription(b.ctx, s); err != nil {
			t.Fatal(err)
		}
		want = append(want, s.ID)
	}
	checkBounded(t, "subscriptions", want, func(p store.Page) ([]subscription.Subscription, string, error) {
		return b.s.ListSubscriptions(b.ctx, "", p)
	}, func(s subscription.Subscription) int64 { return subscriptionBytes(t, s) },
		func(s subscription.Subscription) string { return s.ID })
}

// testListEndpointsBytes: an endpoint's bytes are its URL and its health
// window (as stored: JSON, "[]" when empty).
func testListEndpointsBytes(t *testing.T, b *bundle) {
	var want []string
	for i, n := range pageSizes {
		prefix := fmt.Sprintf("https://%d.example/", i)
		s := b.sub(prefix + strings.Repeat("x", n-len(prefix)-len("[]")))
		want = append(want, s.EndpointID)
	}
	want = sortedCopy(want)
	checkBounded(t, "endpoints", want, func(p store.Page) ([]endpoint.Endpoint, string, error) {
		return b.s.ListEndpoints(b.ctx, "", "", p)
	}, func(e endpoint.Endpoint) int64 {
		w, err := json.Marshal(e.Health.Window)
		if err != nil {
			t.Fatal(err)
		}
		return int64(len(e.URL) + len(w))
	}, func(e endpoint.Endpoint) string { return e.ID })
}

// testListInvalidCursors: every list answers ErrInvalidCursor for a cursor
// not in its format, and takes one in its format that it never gave (an ID
// of the right kind, the number of an attempt not made).
func testListInvalidCursors(t *testing.T, b *bundle) {
	a := b.sub("https://a.example/hook")
	id := b.deadAfterTwo(a, b.now)
	ulid := ids.New("", b.at(time.Hour)) // sorts after every ID made so far
	lists := []struct {
		name   string
		list   func(cursor string) (int, error)
		good   string
		wantAt int // items listed after the good cursor
		bad    []string
	}{
		{"deliveries", func(c string) (int, error) {
			ds, _, err := b.s.ListDeliveries(b.ctx, store.DeliveryFilter{Page: store.Page{Cursor: c}})
			return len(ds), err
		}, "dlv_" + ulid, 1, []string{"dlv_", "dlv_" + ulid[1:], "dlv_" + ulid + "0", "sub_" + ulid, "dlv_" + strings.ToUpper(ulid), "dlv_" + ulid[1:] + "u", id + "' OR '1'='1", "abc"}},
		{"dead letters", func(c string) (int, error) {
			ds, _, err := b.s.ListDeadLetters(b.ctx, store.DeadLetterFilter{Page: store.Page{Cursor: c}})
			return len(ds), err
		}, "dlv_" + ulid, 1, []string{"dlv_" + ulid[2:], "ep_" + ulid[:20], "42"}},
		{"attempts", func(c string) (int, error) {
			as, _, err := b.s.ListAttempts(b.ctx, id, store.Page{Cursor: c})
			return len(as), err
		}, "1", 1, []string{"-1", "1.5", "01", "+1", "2147483648", "x", "dlv_" + ulid}},
		{"subscriptions", func(c string) (int, error) {
			ss, _, err := b.s.ListSubscriptions(b.ctx, "", store.Page{Cursor: c})
			return len(ss), err
		}, "sub_" + strings.Repeat("0", 26), 1, []string{"sub_" + ulid[1:], "dlv_" + ulid, "sub_" + ulid + " ", "zzz"}},
		{"endpoints", func(c string) (int, error) {
			eps, _, err := b.s.ListEndpoints(b.ctx, "", "", store.Page{Cursor: c})
			return len(eps), err
		}, "ep_" + strings.Repeat("0", 20), 1, []string{"ep_" + ulid, "ep_" + ulid[:19], "ep_" + ulid[:19] + "i", "sub_" + ulid, "~"}},
	}
	for _, l := range lists {
		for _, c := range l.bad {
			if n, err := l.list(c); !errors.Is(err, store.ErrInvalidCursor) {
				t.Errorf("%s, cursor %q: %d items, %v; want ErrInvalidCursor", l.name, c, n, err)
			}
		}
		if n, err := l.list(l.good); err != nil || n != l.wantAt {
			t.Errorf("%s, cursor %q: %d items, %v; want %d", l.name, l.good, n, err, l.wantAt)
		}
	}
}
