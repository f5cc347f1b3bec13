// Package handshake validates push endpoints before Herald sends them
// events, as Azure Event Grid and the CloudEvents webhook specification do.
// A subscription created with a validation kind starts awaiting_validation:
// its deliveries are queued, nothing is pushed. The Validator sends the
// handshake — Event Grid's SubscriptionValidationEvent, or the CloudEvents
// OPTIONS request — retrying on the subscription's retry policy, and on
// success activates the subscription, whose queued deliveries are then
// pushed. An Event Grid endpoint may instead GET the validation URL it was
// sent (Confirm). A failed handshake leaves the subscription waiting, with
// a validation_error saying why.
package handshake

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/clock"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/startstop"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// maxAnswer bounds how much of a handshake answer is read.
const maxAnswer = 64 << 10

// Store is what the validator reads and writes.
type Store interface {
	GetSubscription(ctx context.Context, id string) (subscription.Subscription, error)
	UpdateSubscription(ctx context.Context, s subscription.Subscription) error
}

// Catalog is the view of subscriptions the validator scans.
type Catalog interface {
	Snapshot() *catalog.Snapshot
}

// Activator makes a validated subscription active and pushes what was
// queued meanwhile (control.Service.Activate).
type Activator interface {
	Activate(ctx context.Context, id string) error
}

// Validator runs the handshakes of the subscriptions awaiting validation.
type Validator struct {
	Store    Store
	Catalog  Catalog
	Activate Activator
	// Client sends the handshakes: the attempting stage's (no redirects, the
	// destination guard on every connection).
	Client *http.Client
	Clock  clock.Clock
	Logger *slog.Logger
	// PublicURL is Herald's base URL as the endpoints reach it, for the
	// Event Grid validation URL.
	PublicURL string
	// UserAgent is sent with each handshake.
	UserAgent string
	// Every is how often the validator looks for handshakes due (1 s).
	Every time.Duration

	once   sync.Once
	rounds *startstop.Loop // runs Round every Every (see loop)

	mu    sync.Mutex
	tries map[string]*tries // by subscription
}

// tries is a subscription's handshake schedule in this process.
type tries struct {
	n, round int // attempts made; of which in this budget
	first    time.Time
	next     time.Time
	done     bool // gave up: the policy ended
}

// Start looks for due handshakes now and every Every on the clock until
// Stop (or ctx ends). Handshakes run one at a time, each within its
// subscription's timeout.
func (v *Validator) Start(ctx context.Context) error { return v.loop().Start(ctx) }

// Stop ends the rounds and waits for the one in progress.
func (v *Validator) Stop() { v.loop().Stop() }

// Started is closed once the rounds run.
func (v *Validator) Started() <-chan struct{} { return v.loop().Started() }

// Stopped is closed once the rounds have stopped.
func (v *Validator) Stopped() <-chan struct{} { return v.loop().Stopped() }

// Loops returns the loop that runs the rounds (tests read its signals).
func (v *Validator) Loops() []*startstop.Loop { return []*startstop.Loop{v.loop()} }

// loop returns the loop of Round, made at its first use.
func (v *Validator) loop() *startstop.Loop {
	v.once.Do(func() {
		every := v.Every
		if every <= 0 {
			every = time.Second
		}
		v.rounds = startstop.NewLoop("handshakes", v.Clock, func(ctx context.Context) time.Duration {
			v.Round(ctx)
			return every
		})
	})
	return v.rounds
}

// Round runs every handshake due now, and forgets the schedules of
// subscriptions no longer waiting (validated elsewhere, or deleted).
func (v *Validator) Round(ctx context.Context) {
	now := v.Clock.Now()
	snap := v.Catalog.Snapshot()
	v.mu.Lock()
	for id := range v.tries {
		if e := snap.Get(id); e == nil || e.State != subscription.StateAwaitingValidation {
			delete(v.tries, id)
		}
	}
	v.mu.Unlock()
	for _, e := range snap.All() {
		if e.State != subscription.StateAwaitingValidation || ctx.Err() != nil {
			continue
		}
		v.mu.Lock()
		if v.tries == nil {
			v.tries = map[string]*tries{}
		}
		tr := v.tries[e.ID]
		if tr == nil {
			tr = &tries{next: now}
			v.tries[e.ID] = tr
		}
		due := !tr.done && !now.Before(tr.next)
		v.mu.Unlock()
		if due {
			v.attempt(ctx, e, tr, now)
		}
	}
}

// attempt sends one handshake and follows its result.
func (v *Validator) attempt(ctx context.Context, e *catalog.Entry, tr *tries, now time.Time) {
	err := v.handshake(ctx, e)
	if err == nil {
		v.setError(ctx, e.ID, "") // passed: no error to show
		if err := v.Activate.Activate(ctx, e.ID); err != nil {
			v.Logger.Warn("activating a validated subscription", "subscription_id", e.ID, "err", err)
			return
		}
		v.Logger.Info("endpoint validated; the subscription is active", "subscription_id", e.ID, "kind", e.Delivery.Validation)
		v.forget(e.ID)
		return
	}
	v.mu.Lock()
	tr.n++
	tr.round++
	if tr.first.IsZero() {
		tr.first = now
	}
	verdict := e.Policy.Decide(retry.Attempt{Number: tr.round, Start: e.CreatedAt, FirstFailure: tr.first, Now: now},
		func() float64 { return 0.5 }) // no jitter: one handshake at a time

	if verdict.Kind == retry.Retry {
		tr.next = verdict.At
	} else {
		tr.done = true
	}
	done, n := tr.done, tr.n
	v.mu.Unlock()
	msg := err.Error()
	if done {
		msg += fmt.Sprintf(" (gave up after %d attempts: the retry policy ended; create the subscription again to retry)", n)
	}
	v.Logger.Info("endpoint validation failed", "subscription_id", e.ID, "kind", e.Delivery.Validation, "err", err)
	v.setError(ctx, e.ID, msg)
}

// setError stores why the last handshake failed.
func (v *Validator) setError(ctx context.Context, id, msg string) {
	sub, err := v.Store.GetSubscription(ctx, id)
	if err != nil || sub.Delivery.ValidationError == msg {
		return
	}
	sub.Delivery.ValidationError = msg
	if err := v.Store.UpdateSubscription(ctx, sub); err != nil && !errors.Is(err, store.ErrNotFound) {
		v.Logger.Warn("storing a validation error", "subscription_id", id, "err", err)
	}
}

func (v *Validator) forget(id string) {
	v.mu.Lock()
	delete(v.tries, id)
	v.mu.Unlock()
}

// handshake sends e's handshake and says why it failed (nil: validated).
// The error is what the log and the subscription's validation_error show:
// the password of a URL in it is redacted (redact.Error).
func (v *Validator) handshake(ctx context.Context, e *catalog.Entry) error {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch e.Delivery.Validation {
	case subscription.ValidationEventGrid:
		return redact.Error(v.eventGrid(ctx, e))
	case subscription.ValidationCloudEvents:
		return redact.Error(v.cloudEvents(ctx, e))
	}
	return fmt.Errorf("unknown validation kind %q", e.Delivery.Validation)
}

// ValidationURL is the URL an Event Grid endpoint may GET to validate
// itself (Confirm): it holds the subscription's secret token.
func (v *Validator) ValidationURL(e *catalog.Entry) string {
	return strings.TrimSuffix(v.PublicURL, "/") + "/v1/validation/" + e.ID + "?code=" + url.QueryEscape(e.Delivery.ValidationToken)
}

// eventGrid sends Event Grid's SubscriptionValidationEvent: valid when the
// endpoint answers 200 with {"validationResponse": code}.
func (v *Validator) eventGrid(ctx context.Context, e *catalog.Entry) error {
	now := v.Clock.Now().UTC()
	body, _ := json.Marshal([]map[string]any{{
		"id": "validation-" + e.ID, "topic": "/accounts/" + account.OrDefault(e.AccountID), "subject": "",
		"eventType": "Microsoft.EventGrid.SubscriptionValidationEvent", "eventTime": now.Format(time.RFC3339Nano),
		"data":        map[string]string{"validationCode": e.Delivery.ValidationToken, "validationUrl": v.ValidationURL(e)},
		"dataVersion": "1", "metadataVersion": "1",
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Aeg-Event-Type", "SubscriptionValidation")
	req.Header.Set("Aeg-Subscription-Name", strings.ToUpper(e.Name))
	req.Header.Set("User-Agent", v.UserAgent)
	resp, err := v.Client.Do(req)
	if err != nil {
		return fmt.Errorf("the Event Grid validation request failed: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the endpoint answered the Event Grid validation request %d, want 200 with {\"validationResponse\": code} (or a GET of the validationUrl)", resp.StatusCode)
	}
	var ans struct {
		ValidationResponse string `json:"validationResponse"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || ans.ValidationResponse == "" {
		return errors.New("the endpoint answered 200 without a validationResponse: answer {\"validationResponse\": the data's validationCode}")
	}
	if subtle.ConstantTimeCompare([]byte(ans.ValidationResponse), []byte(e.Delivery.ValidationToken)) != 1 {
		return errors.New("the endpoint's validationResponse is not the validationCode it was sent")
	}
	return nil
}

// cloudEvents sends the CloudEvents webhook validation request (OPTIONS with
// WebHook-Request-Origin): valid when the endpoint answers 2xx with
// WebHook-Allowed-Origin naming that origin or "*".
func (v *Validator) cloudEvents(ctx context.Context, e *catalog.Entry) error {
	origin := v.origin()
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, e.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("WebHook-Request-Origin", origin)
	req.Header.Set("User-Agent", v.UserAgent)
	resp, err := v.Client.Do(req)
	if err != nil {
		return fmt.Errorf("the CloudEvents validation request failed: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the endpoint answered the CloudEvents validation request (OPTIONS) %d, want 200 with WebHook-Allowed-Origin", resp.StatusCode)
	}
	allowed := strings.TrimSpace(resp.Header.Get("WebHook-Allowed-Origin"))
	if allowed != "*" && !strings.EqualFold(allowed, origin) {
		return fmt.Errorf("the endpoint's WebHook-Allowed-Origin is %q, want %q or *", allowed, origin)
	}
	return nil
}

// origin is the WebHook-Request-Origin Herald sends: its public host.
func (v *Validator) origin() string {
	if u, err := url.Parse(v.PublicURL); err == nil && u.Host != "" {
		return u.Host
	}
	return "herald"
}

// ErrBadCode: a GET of the validation URL with a code that is not the
// subscription's.
var ErrBadCode = errors.New("not this subscription's validation code")

// Confirm validates a subscription whose endpoint GETs its validation URL
// with the code it was sent. store.ErrNotFound when there is no such
// subscription awaiting validation; ErrBadCode for a wrong code.
func (v *Validator) Confirm(ctx context.Context, id, code string) error {
	sub, err := v.Store.GetSubscription(ctx, id)
	if err != nil {
		return err
	}
	if sub.Delivery.Validation != subscription.ValidationEventGrid || sub.Delivery.ValidationToken == "" {
		return fmt.Errorf("subscription %s has no Event Grid validation: %w", id, store.ErrNotFound)
	}
	if subtle.ConstantTimeCompare([]byte(code), []byte(sub.Delivery.ValidationToken)) != 1 {
		return ErrBadCode
	}
	if sub.State != subscription.StateAwaitingValidation {
		return nil // validated already
	}
	if err := v.Activate.Activate(ctx, id); err != nil {
		return err
	}
	v.forget(id)
	return nil
}
