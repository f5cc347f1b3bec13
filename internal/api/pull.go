package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/handshake"
	"github.com/herald-events/herald/internal/queue"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/strictjson"
	"github.com/herald-events/herald/internal/subscription"
)

// Queue is the consumers' side of queued deliveries (queue.Service).
type Queue interface {
	Receive(ctx context.Context, r store.ReceiveRequest, maxWait time.Duration) (store.ReceiveResult, error)
	Settle(ctx context.Context, r store.SettleRequest) ([]error, error)
}

// releaseDelays are the delays a release may ask for (Event Grid's).
var releaseDelays = []time.Duration{0, 10 * time.Second, time.Minute, 10 * time.Minute, time.Hour}

// receivedJSON is one received delivery.
type receivedJSON struct {
	LockToken     string          `json:"lock_token"`
	DeliveryID    string          `json:"delivery_id"`
	DeliveryCount int             `json:"delivery_count"`
	LockedUntil   Time            `json:"locked_until"`
	Event         json.RawMessage `json:"event"`
}

// queueOf reads the path's subscription and its catalog entry for a
// consumer's call: 404 when absent or another account's; 409 for an active
// push subscription, which has no queue.
func (s *Server) queueOf(w http.ResponseWriter, r *http.Request) (subscription.Subscription, *catalog.Entry, bool) {
	sub, ok := s.ownSubscription(w, r)
	if !ok {
		return sub, nil, false
	}
	return s.queueFor(w, r, sub)
}

// queueFor is queueOf for a subscription already read.
func (s *Server) queueFor(w http.ResponseWriter, r *http.Request, sub subscription.Subscription) (subscription.Subscription, *catalog.Entry, bool) {
	if sub.DeliveryMode != subscription.ModePull && sub.State != subscription.StateDeactivated {
		conflict(w, "", "subscription "+sub.ID+" is a push subscription in state "+sub.State+": only a pull subscription, or a deactivated push subscription, has a queue to receive from")
		return sub, nil, false
	}
	e, err := catalog.NewEntry(sub)
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return sub, nil, false
	}
	return sub, e, true
}

func (s *Server) receive(w http.ResponseWriter, r *http.Request) {
	var in struct {
		MaxEvents    *int                 `json:"max_events"`
		MaxWait      *strictjson.Duration `json:"max_wait"`
		LockDuration *strictjson.Duration `json:"lock_duration"`
	}
	sub, e, ok := s.queueOf(w, r)
	if !ok {
		return
	}
	if !decodeOptionalBody(w, r, &in) {
		return
	}
	max := 1
	if in.MaxEvents != nil {
		if *in.MaxEvents < 1 || *in.MaxEvents > queue.MaxEvents {
			invalid(w, "max_events", fmt.Sprintf("must be from 1 to %d, got %d", queue.MaxEvents, *in.MaxEvents))
			return
		}
		max = *in.MaxEvents
	}
	wait, ok := durationIn(w, "max_wait", in.MaxWait, 0, 0, queue.MaxWait)
	if !ok {
		return
	}
	lock, ok := durationIn(w, "lock_duration", in.LockDuration, queue.DefaultLock, queue.MinLock, queue.MaxLock)
	if !ok {
		return
	}
	res, ok := s.receiveFrom(w, r, sub, e, max, wait, lock, receiveBytesV1)
	if !ok {
		return
	}
	// Streamed as a list page is: the store returned what fits in
	// MaxReceiveBytes as written here (receiveBytesV1), and each is let go
	// once written.
	if _, ok := writeItems(w, "data", false, res.Received, toReceivedJSON); ok {
		_, _ = io.WriteString(w, "}\n")
	}
}

// receiveFrom locks up to max of sub's queued deliveries for lock, waiting
// up to wait for some (the write deadline moved by as much; a receive
// that waits takes one of its account's MaxReceivesPerAccount places, or
// answers 429), as many as fit in MaxReceiveBytes as the answer counts
// them (size): the receive of both APIs (this one and eventgrid.go's). On
// a problem it answers and returns false.
func (s *Server) receiveFrom(w http.ResponseWriter, r *http.Request, sub subscription.Subscription, e *catalog.Entry, max int, wait, lock time.Duration, size receiveBytes) (store.ReceiveResult, bool) {
	if wait > 0 {
		account := accountOf(r)
		if !s.receives.take(w, r, account) {
			return store.ReceiveResult{}, false
		}
		defer s.receives.give(account)
		extendWriteDeadline(w, r, wait)
	}
	req := store.ReceiveRequest{
		SubscriptionID: sub.ID, Max: max, LockFor: lock,
		MaxReceives: e.Policy.MaxAttempts, TTL: e.Policy.TTL, DeadLetter: sub.DeadLetter,
	}
	size.bound(&req)
	res, err := s.Queue.Receive(r.Context(), req, wait)
	switch {
	case errors.Is(err, queue.ErrTooManyWaiters):
		unavailable(w, "too many consumers are waiting on this server; try again, or with no wait")
		return res, false
	case err != nil:
		s.storeError(w, r, err, "subscription")
		return res, false
	}
	return res, true
}

// MaxReceiveBytes bounds a receive's answer (/v1's and Event Grid's) as it
// goes on the wire, its envelope included: it holds the events that fit,
// in order, and crosses the bound only with its first event alone, one
// larger than the bound (docs/queue.md).
const MaxReceiveBytes = store.MaxPageBytes

// receiveBytes is how a receive answer's format counts its bytes, for the
// store to lock only what fits in MaxReceiveBytes (store.ReceiveRequest's
// MaxBytes and ItemBytes): envelope, the answer without an event; perItem,
// what one event adds besides its payload and twice its delivery ID (the
// ID and the lock token that begins with it), the comma before it
// included. The event is its payload compacted and written without HTML
// escapes (writeItems), so no larger than stored; perItem counts the
// widest delivery count.
type receiveBytes struct{ envelope, perItem int64 }

// The formats of the two receive answers.
var (
	receiveBytesV1        = measureReceive("data", toReceivedJSON)
	receiveBytesEventGrid = measureReceive("value", toEventGridReceived)
)

// measureReceive measures the format of an answer {"<member>":[...]} of
// items view makes: an item made of a delivery whose ID is empty, whose
// lock token holds the 26 random characters of every token and whose
// count has the most digits, with the one-byte event 0.
func measureReceive[V any](member string, view func(store.Received) V) receiveBytes {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	d := store.Received{LockToken: store.LockToken("", strings.Repeat("x", 26)), Payload: []byte("0")}
	d.Receives, d.LockedUntil = math.MaxInt, time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	if err := enc.Encode(view(d)); err != nil {
		panic(err) // a resource of fixed fields: cannot fail
	}
	item := int64(buf.Len()) - int64(len("0\n")) + int64(len(","))
	envelope := int64(len(`{"` + member + `":[` + "]}\n"))
	return receiveBytes{envelope: envelope, perItem: item}
}

// bound sets r's bound of bytes to an answer of this format within
// MaxReceiveBytes. A payload that is not JSON goes out as null, hence at
// least len("null").
func (b receiveBytes) bound(r *store.ReceiveRequest) {
	r.MaxBytes = MaxReceiveBytes - b.envelope
	r.ItemBytes = func(deliveryID string, payloadBytes int64) int64 {
		return b.perItem + 2*int64(len(deliveryID)) + max(payloadBytes, int64(len("null")))
	}
}

// toReceivedJSON is a received delivery's resource.
func toReceivedJSON(d store.Received) receivedJSON {
	ev := json.RawMessage(d.Payload)
	if !json.Valid(ev) {
		ev = json.RawMessage("null")
	}
	return receivedJSON{LockToken: d.LockToken, DeliveryID: d.ID, DeliveryCount: d.Receives,
		LockedUntil: timestamp(d.LockedUntil), Event: ev}
}

// extendWriteDeadline moves the connection's write deadline wait later than
// the http.Server set it (WriteTimeout from when it read the request's
// header; see NewHTTPServer): a long poll gets the time every request gets
// to be answered, after its wait. Without it a receive waiting
// queue.MaxWait would have its answer cut by the server's 60 s timeout.
// (The read deadline needs nothing: net/http clears it once the body is
// read.) Deadlines are real time, like the server's; the wait may be on
// another clock (queue.Service's), and only makes the deadline later.
func extendWriteDeadline(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	hs, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if hs == nil || hs.WriteTimeout <= 0 {
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + hs.WriteTimeout))
}

// settleInput is the body of acknowledge, release, reject and renew-lock.
type settleInput struct {
	LockTokens []string             `json:"lock_tokens"`
	Delay      *strictjson.Duration `json:"delay"`         // release only
	LockFor    *strictjson.Duration `json:"lock_duration"` // renew-lock only
}

type failedToken struct {
	LockToken string `json:"lock_token"`
	Error     string `json:"error"`
}

// settle answers a consumer's acknowledge, release, reject or renew-lock:
// one result per token, {"succeeded": [...], "failed": [{lock_token,
// error}]}; a token that holds no live lock fails, the others succeed.
func (s *Server) settle(action store.LockAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The subscription first: another account's is 404 whatever the
		// body says.
		sub, _, ok := s.queueOf(w, r)
		if !ok {
			return
		}
		var in settleInput
		if !decodeBody(w, r, &in) {
			return
		}
		switch {
		case !checkTokens(w, "lock_tokens", in.LockTokens):
			return
		case in.Delay != nil && action != store.Release:
			invalid(w, "delay", "only release takes a delay")
			return
		case in.LockFor != nil && action != store.Renew:
			invalid(w, "lock_duration", "only renew-lock takes a lock_duration")
			return
		}
		req := store.SettleRequest{Action: action, Tokens: in.LockTokens}
		if in.Delay != nil {
			if !slices.Contains(releaseDelays, in.Delay.D()) {
				invalid(w, "delay", `must be one of "0s", "10s", "60s", "600s", "3600s", not `+in.Delay.D().String())
				return
			}
			req.Delay = in.Delay.D()
		}
		if action == store.Renew {
			d, ok := durationIn(w, "lock_duration", in.LockFor, queue.DefaultLock, queue.MinLock, queue.MaxLock)
			if !ok {
				return
			}
			req.LockFor = d
		}
		res, ok := s.settleFor(w, r, sub, req)
		if !ok {
			return
		}
		var out struct {
			Succeeded []string      `json:"succeeded"`
			Failed    []failedToken `json:"failed"`
		}
		out.Succeeded, out.Failed = splitSettled(in.LockTokens, res, func(token string, err error) failedToken {
			return failedToken{LockToken: token, Error: err.Error()}
		})
		writeJSON(w, http.StatusOK, out)
	}
}

// checkTokens answers 400 naming field (or one of its tokens) unless
// tokens holds 1 to queue.MaxTokens tokens of receive's shape, and
// reports whether it did not.
func checkTokens(w http.ResponseWriter, field string, tokens []string) bool {
	switch {
	case len(tokens) == 0:
		invalid(w, field, field+" is required: one or more tokens from receive")
		return false
	case len(tokens) > queue.MaxTokens:
		invalid(w, field, fmt.Sprintf("at most %d tokens a request, got %d", queue.MaxTokens, len(tokens)))
		return false
	}
	for i, t := range tokens {
		if store.LockTokenDelivery(t) == "" || len(t) > 100 {
			invalid(w, fmt.Sprintf("%s[%d]", field, i), "not a lock token from receive")
			return false
		}
	}
	return true
}

// splitSettled splits tokens by their results (settleFor's, in order):
// those that succeeded, and what failed makes of each other one.
func splitSettled[F any](tokens []string, res []error, failed func(token string, err error) F) ([]string, []F) {
	succeeded, failures := []string{}, []F{}
	for i, err := range res {
		if err == nil {
			succeeded = append(succeeded, tokens[i])
		} else {
			failures = append(failures, failed(tokens[i], err))
		}
	}
	return succeeded, failures
}

// settleFor settles req's tokens on sub's queue: each token's result (nil
// or store.ErrLockLost), in order. On a problem it answers and returns
// false.
func (s *Server) settleFor(w http.ResponseWriter, r *http.Request, sub subscription.Subscription, req store.SettleRequest) ([]error, bool) {
	req.SubscriptionID, req.DeadLetter = sub.ID, sub.DeadLetter
	res, err := s.Queue.Settle(r.Context(), req)
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return nil, false
	}
	return res, true
}

// reactivate makes a deactivated push subscription active again and pushes
// its queued deliveries with a fresh budget.
func (s *Server) reactivate(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.ownSubscription(w, r); !ok {
		return
	}
	sub, n, err := s.Control.Reactivate(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrConflict) {
		conflict(w, "", "only a deactivated push subscription is reactivated: a pull subscription never is, and one awaiting validation is activated by its endpoint's handshake")
		return
	}
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		subscriptionJSON
		Requeued int `json:"requeued"`
	}{toSubscriptionJSON(sub), n})
}

// deactivate deactivates an active push subscription by hand: its
// deliveries queue until it is reactivated. A deactivated one is answered
// as it is.
func (s *Server) deactivate(w http.ResponseWriter, r *http.Request) {
	before, ok := s.ownSubscription(w, r)
	if !ok {
		return
	}
	sub, err := s.Control.Deactivate(r.Context(), before.ID)
	if errors.Is(err, store.ErrConflict) {
		conflict(w, "", deactivateConflict(before))
		return
	}
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return
	}
	writeJSON(w, http.StatusOK, toSubscriptionJSON(sub))
}

// deactivateConflict says why a subscription is not deactivated, and what
// to do instead.
func deactivateConflict(sub subscription.Subscription) string {
	if sub.DeliveryMode == subscription.ModePull {
		return "subscription " + sub.ID + " is a pull subscription: it pushes nothing, and its deliveries are always queued for its consumers; only a push subscription is deactivated"
	}
	return "subscription " + sub.ID + " awaits its endpoint's validation: it pushes nothing until the handshake passes; delete it to stop it"
}

// confirmValidation is the validation URL an Event Grid endpoint may GET
// instead of answering the handshake: it needs no key, the code in it
// being the subscription's secret.
func (s *Server) confirmValidation(w http.ResponseWriter, r *http.Request) {
	if s.Validator == nil {
		notFound(w, "validation")
		return
	}
	err := s.Validator.Confirm(r.Context(), r.PathValue("id"), codeParam.in(r))
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, handshake.ErrBadCode):
		// The same answer for both: the URL does not say which ids exist.
		notFound(w, "validation")
	case err != nil:
		s.storeError(w, r, err, "subscription")
	default:
		writeJSON(w, http.StatusOK, map[string]bool{"validated": true})
	}
}

// durationIn reads an optional duration field: def when absent, else
// within [min, max]. On a problem it answers and returns false.
func durationIn(w http.ResponseWriter, field string, v *strictjson.Duration, def, min, max time.Duration) (time.Duration, bool) {
	if v == nil {
		return def, true
	}
	if d := v.D(); d < min || d > max {
		invalid(w, field, fmt.Sprintf("must be from %s to %s, got %s", min, max, d))
		return 0, false
	}
	return v.D(), true
}
