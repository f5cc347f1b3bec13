package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/catalog"
	"github.com/herald-events/herald/internal/queue"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// A namespace topic's subscriptions (eventgrid.go): receive and settle on
// the queue of a pull (or deactivated push) subscription, as
// /v1/subscriptions/{id}/receive and its settles do (pull.go), on the same
// store state: a lock taken through one API settles through the other.

// maxEventGridWait is the longest maxWaitTime a receive takes (Event
// Grid's); eventGridWait is the wait without one (Event Grid's default).
const (
	maxEventGridWait = 120 * time.Second
	eventGridWait    = 60 * time.Second
)

// eventGridQueue reads the path's {subscription}, a subscription's id or
// name in the topic's account, and its queue: 404 when there is none, 409
// when it has no queue (an active push subscription).
func (s *Server) eventGridQueue(w http.ResponseWriter, r *http.Request) (subscription.Subscription, *catalog.Entry, bool) {
	name := r.PathValue("subscription")
	var sub subscription.Subscription
	var err error
	if subscriptionIDs.fits(name) {
		sub, err = s.Store.GetSubscription(r.Context(), name)
		if err == nil && account.OrDefault(sub.AccountID) != accountOf(r) {
			err = store.ErrNotFound
		}
	} else {
		sub, err = s.Store.SubscriptionByName(r.Context(), accountOf(r), name)
	}
	if errors.Is(err, store.ErrNotFound) {
		writeProblem(w, Problem{Type: probNotFound, Title: "Not found", Status: http.StatusNotFound, Field: "subscription",
			Detail: "subscription " + quoteHeader(name) + " not found in topic " + quoteHeader(r.PathValue("topic")) + " (a subscription's id or name)"})
		return sub, nil, false
	}
	if err != nil {
		s.storeError(w, r, err, "subscription")
		return sub, nil, false
	}
	return s.queueFor(w, r, sub)
}

// eventGridReceived is one received event, as Event Grid answers it.
type eventGridReceived struct {
	BrokerProperties struct {
		LockToken     string `json:"lockToken"`
		DeliveryCount int    `json:"deliveryCount"`
	} `json:"brokerProperties"`
	Event json.RawMessage `json:"event"`
}

// receiveEventGrid is :receive: maxEvents 1..queue.MaxEvents (1 by
// default), maxWaitTime in seconds 0..120 (60 by default), each event
// locked for queue.DefaultLock; {"value": [...]}, streamed as /v1's
// receive is, and within MaxReceiveBytes as it is.
func (s *Server) receiveEventGrid(w http.ResponseWriter, r *http.Request) {
	sub, e, ok := s.eventGridQueue(w, r)
	if !ok {
		return
	}
	max, ok := intParam(w, r, maxEventsParam, 1, 1, queue.MaxEvents)
	if !ok {
		return
	}
	secs, ok := intParam(w, r, maxWaitTimeParam, int(eventGridWait/time.Second), 0, int(maxEventGridWait/time.Second))
	if !ok {
		return
	}
	res, ok := s.receiveFrom(w, r, sub, e, max, time.Duration(secs)*time.Second, queue.DefaultLock, receiveBytesEventGrid)
	if !ok {
		return
	}
	if _, ok := writeItems(w, "value", false, res.Received, toEventGridReceived); ok {
		_, _ = io.WriteString(w, "}\n")
	}
}

func toEventGridReceived(d store.Received) eventGridReceived {
	var out eventGridReceived
	out.BrokerProperties.LockToken, out.BrokerProperties.DeliveryCount = d.LockToken, d.Receives
	out.Event = toReceivedJSON(d).Event
	return out
}

// intParam reads a whole-number query parameter within [min, max], def
// when absent. On a problem it answers 400 naming it and returns false.
func intParam(w http.ResponseWriter, r *http.Request, p param, def, min, max int) (int, bool) {
	v := p.in(r)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		invalid(w, p.name, fmt.Sprintf("must be a whole number from %d to %d, not %s", min, max, quoteHeader(v)))
		return 0, false
	}
	return n, true
}

// eventGridFailed is a token Event Grid's settle could not settle.
type eventGridFailed struct {
	LockToken string `json:"lockToken"`
	Error     struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// settleEventGrid is :acknowledge, :release (releaseDelayInSeconds 0, 10,
// 60, 600 or 3600; 0 by default), :reject and :renewLock (for
// queue.DefaultLock): {"lockTokens": [...]} → {"succeededLockTokens",
// "failedLockTokens"}, a token that holds no live lock failing with code
// TokenLost.
func (s *Server) settleEventGrid(action store.LockAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sub, _, ok := s.eventGridQueue(w, r)
		if !ok {
			return
		}
		var in struct {
			LockTokens []string `json:"lockTokens"`
		}
		if !decodeBody(w, r, &in) || !checkTokens(w, "lockTokens", in.LockTokens) {
			return
		}
		req := store.SettleRequest{Action: action, Tokens: in.LockTokens}
		if action == store.Renew {
			req.LockFor = queue.DefaultLock
		}
		if v := releaseDelayParam.in(r); v != "" {
			n, _ := strconv.Atoi(v) // checkParams let only its values through
			req.Delay = time.Duration(n) * time.Second
		}
		res, ok := s.settleFor(w, r, sub, req)
		if !ok {
			return
		}
		var out struct {
			Succeeded []string          `json:"succeededLockTokens"`
			Failed    []eventGridFailed `json:"failedLockTokens"`
		}
		out.Succeeded, out.Failed = splitSettled(in.LockTokens, res, func(token string, err error) eventGridFailed {
			f := eventGridFailed{LockToken: token}
			f.Error.Code, f.Error.Message = "TokenLost", err.Error()
			return f
		})
		writeJSON(w, http.StatusOK, out)
	}
}
