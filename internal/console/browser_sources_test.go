package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/herald-events/herald/internal/ids"
)

// natsServer is the JetStream server every machine of the project runs.
const natsServer = "nats://127.0.0.1:4222"

// testStream makes a JetStream stream of the test's own (a unique name,
// subjects <prefix>.>), deleted when the test ends, and returns a
// JetStream client, the stream's name and the subject prefix.
func testStream(t *testing.T) (jetstream.JetStream, string, string) {
	t.Helper()
	nc, err := nats.Connect(natsServer, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("NATS at %s (.ci/run starts it): %v", natsServer, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	u := ids.New("", time.Now())
	name, prefix := "HC_"+u, "hc"+u
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{prefix + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, name)
	})
	return js, name, prefix
}

// byID is the CSS selector of the element whose id is id (the source
// form's ids hold dots, as the API's fields do).
func byID(id string) chromedp.CSS { return chromedp.CSS(`[id="` + id + `"]`) }

// TestBrowserSourceFromTheForm: in Chromium, the admin makes a raw NATS
// source through the form, reading a JetStream stream of the test's own
// on the project's NATS server; a message published to the stream moves
// the counts its page shows (received, published); Pause on the page
// pauses it, as the API then says.
func TestBrowserSourceFromTheForm(t *testing.T) {
	b := newBrowser(t) // first: it may skip the test
	n := setup(t)
	js, stream, prefix := testStream(t)

	b.do(t, "opening the console", chromedp.Navigate(n.url+"/console/login"))
	b.signIn(t, adminKey)
	b.text(t, "#no-subscriptions")
	b.do(t, "opening the sources", chromedp.Click(chromedp.CSS(`nav a[href="/console/sources"]`)), chromedp.WaitVisible(chromedp.CSS("#no-sources")))
	b.do(t, "opening the create form", chromedp.Click(chromedp.CSS("#new-source")), chromedp.WaitVisible(chromedp.CSS("#source-form")))
	b.do(t, "filling in the form",
		chromedp.SetValue(chromedp.CSS("#type"), "nats"),
		chromedp.SendKeys(chromedp.CSS("#name"), "orders"),
		chromedp.SendKeys(chromedp.CSS("#url"), natsServer),
		chromedp.SendKeys(chromedp.CSS("#subject"), prefix+".>"),
		chromedp.SendKeys(chromedp.CSS("#stream"), stream),
		chromedp.SetValue(chromedp.CSS("#format"), "raw"),
		chromedp.SendKeys(byID("wrap.type"), "order.placed"),
		chromedp.SendKeys(byID("wrap.source"), "/nats"),
		chromedp.Click(chromedp.CSS("#save")))
	if msg := b.text(t, "#message"); !strings.HasPrefix(msg, "Source created") {
		t.Fatalf("after the create form the page says %q", msg)
	}
	loc := read(t, b, "reading the page's address", chromedp.Location())
	id := strings.TrimSuffix(strings.TrimPrefix(loc, n.url+"/console/sources/"), "?done=created")
	if got := sourceAPI(n, id); got["subject"] != prefix+".>" || got["stream"] != stream || got["format"] != "raw" {
		t.Fatalf("the source the form made: %v", got)
	}
	if r := b.text(t, "#received"); r != "0" {
		t.Fatalf("before any message the page shows %s received", r)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, prefix+".a", []byte(`{"order": 1}`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the message published", func() bool {
		c, _ := sourceAPI(n, id)["counts"].(map[string]any)
		return c["published"] == 1.0
	})
	b.do(t, "reloading the source's page", chromedp.Reload())
	if r, p := b.text(t, "#received"), b.text(t, "#published"); r != "1" || p != "1" {
		t.Fatalf("after a message the page shows %s received, %s published; want 1 and 1", r, p)
	}
	if state := b.text(t, "#state"); state != "running" {
		t.Fatalf("the running source's state shows %q", state)
	}
	b.shot(t, "console-source")

	b.do(t, "pausing it", chromedp.Click(chromedp.CSS("#pause")), chromedp.WaitVisible(chromedp.CSS("#resume")))
	if msg := b.text(t, "#message"); !strings.HasPrefix(msg, "Paused") {
		t.Fatalf("after Pause the page says %q", msg)
	}
	if state := b.text(t, "#state"); state != "paused" {
		t.Fatalf("after Pause the state shows %q", state)
	}
	if got := n.must(http.StatusOK, adminKey, "GET", "/v1/sources/"+id, nil)["state"]; got != "paused" {
		t.Fatalf("after Pause the API's state is %v", got)
	}
	b.noPolicyViolations(t)
}
