package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/herald-events/herald/internal/delivery"
)

// TestBrowserDeliveriesAndDeadLetters: in Chromium, an operator finds the
// dead-lettered deliveries by status, opens a delivery that failed then
// succeeded, sees both attempts and redelivers it; then selects two of
// three dead letters and redrives them, which leaves the third listed;
// the endpoints list shows both subscriptions' URLs.
// The receiver is a real server on 127.0.0.1; the retry waits on the fake
// clock.
func TestBrowserDeliveriesAndDeadLetters(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	rc := newReceiver(t)
	flakySub := n.subscribe(adminKey, "orders", rc.URL+"/flaky")
	n.publish(adminKey, "evt-flaky")
	flaky := n.failedOnce(flakySub)
	dead := n.subscribe(adminKey, "invoices", rc.URL+"/dead")
	deadIDs := n.deadLetters(adminKey, dead, "evt-dead-1", "evt-dead-2", "evt-dead-3")

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/"))
	b.signIn(t, adminKey)
	b.text(t, "#subscriptions")
	b.shot(t, "subscriptions")
	b.do(t, "opening the deliveries", chromedp.Click(chromedp.CSS(`nav a[href="/console/deliveries"]`)), chromedp.WaitVisible(chromedp.CSS("#search")))
	b.do(t, "searching the dead-lettered", chromedp.SetValue(chromedp.CSS("#status"), "dead_lettered"), chromedp.Click(chromedp.CSS("#search-button")),
		chromedp.WaitReady(chromedp.CSS(`#status option[value="dead_lettered"][selected]`)))
	if list := b.text(t, "#deliveries"); strings.Count(list, "evt-dead-") != 3 || strings.Contains(list, "evt-flaky") {
		t.Fatalf("the dead-lettered deliveries show %q; want the three evt-dead-", list)
	}
	b.shot(t, "deliveries")
	b.do(t, "searching the flaky event", chromedp.SetValue(chromedp.CSS("#status"), ""), chromedp.SendKeys(chromedp.CSS("#event_id"), "evt-flaky"),
		chromedp.Click(chromedp.CSS("#search-button")), chromedp.WaitVisible(chromedp.CSS(`#event_id[value="evt-flaky"]`)))
	b.do(t, "opening the flaky delivery", chromedp.Click(chromedp.CSS(`#deliveries a[href="/console/deliveries/`+flaky+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#redeliver")))
	if as := b.text(t, "#attempts"); !strings.Contains(as, "503") || !strings.Contains(as, "busy, try later") || !strings.Contains(as, "200") {
		t.Fatalf("the flaky delivery's attempts show %q; want a 503 then a 200", as)
	}
	b.shot(t, "delivery")
	b.do(t, "redelivering", chromedp.Click(chromedp.CSS("#redeliver")))
	if msg := b.text(t, "#message"); !strings.HasPrefix(msg, "Redelivered") {
		t.Fatalf("after redelivering the page says %q", msg)
	}
	eventually(t, "the redelivery delivered", func() bool {
		d := n.delivery(flaky)
		return d.Status == delivery.StatusDelivered && d.Attempts == 3
	})

	b.do(t, "opening the dead letters", chromedp.Click(chromedp.CSS(`nav a[href="/console/dead-letters"]`)), chromedp.WaitVisible(chromedp.CSS("#redrive")))
	b.shot(t, "dead-letters")
	rc.cure()
	b.do(t, "redriving two", chromedp.Click(chromedp.CSS("#select-"+deadIDs[0])), chromedp.Click(chromedp.CSS("#select-"+deadIDs[2])),
		chromedp.Click(chromedp.CSS("#redrive")))
	if msg := b.text(t, "#message"); !strings.HasPrefix(msg, "2 dead letters redriven") {
		t.Fatalf("after redriving the page says %q", msg)
	}
	if list := b.text(t, "#dead-letters"); !strings.Contains(list, deadIDs[1]) || strings.Contains(list, deadIDs[0]) || strings.Contains(list, deadIDs[2]) {
		t.Fatalf("after redriving the dead letters show %q; want %s only", list, deadIDs[1])
	}
	for _, id := range []string{deadIDs[0], deadIDs[2]} {
		eventually(t, id+" delivered", func() bool { return n.delivery(id).Status == delivery.StatusDelivered })
	}
	b.do(t, "opening the endpoints", chromedp.Click(chromedp.CSS(`nav a[href="/console/endpoints"]`)))
	if eps := b.text(t, "#endpoints"); !strings.Contains(eps, rc.URL+"/flaky") || !strings.Contains(eps, rc.URL+"/dead") {
		t.Fatalf("the endpoints show %q; want the two subscriptions' URLs", eps)
	}
	b.shot(t, "endpoints")
	b.noPolicyViolations(t)
}

// failedOnce waits until the subscription's one delivery has failed its
// first attempt, moves the fake clock to its retry, waits until it is
// delivered, and returns its ID.
func (n *node) failedOnce(sub string) string {
	n.t.Helper()
	var d delivery.Delivery
	eventually(n.t, "the first attempt to fail", func() bool {
		ds := n.deliveriesOf(sub)
		if len(ds) == 1 {
			d = ds[0]
		}
		return d.Attempts == 1 && d.Status == delivery.StatusPending
	})
	if d.LastStatusCode != http.StatusServiceUnavailable {
		n.t.Fatalf("the first attempt: %+v; want a 503", d)
	}
	n.clk.Set(d.NextAttemptAt)
	eventually(n.t, "the retry delivered", func() bool { return n.delivery(d.ID).Status == delivery.StatusDelivered })
	return d.ID
}
