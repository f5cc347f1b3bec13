package subscription

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/herald-events/herald/internal/destination"
	"github.com/herald-events/herald/internal/event"
	"github.com/herald-events/herald/internal/filter"
	"github.com/herald-events/herald/internal/retry"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/strictjson"
)

// DefaultRetryPolicy is the retry policy of a subscription that names
// none (retry.DefaultPreset's).
const DefaultRetryPolicy = `{"preset":"eventgrid"}`

// ResolvePolicy returns the subscription's retry policy: RetryPolicy resolved
// (retry.Resolve; empty: retry.DefaultPreset). An error names the
// subscription and retry_policy, and wraps a *retry.FieldError when the
// policy's fields are at fault.
func (s *Subscription) ResolvePolicy() (retry.Policy, error) {
	var spec retry.Spec
	if len(s.RetryPolicy) > 0 {
		if err := json.Unmarshal(s.RetryPolicy, &spec); err != nil {
			return retry.Policy{}, fmt.Errorf("subscription %s: retry_policy: %w", s.ID, err)
		}
	}
	p, err := retry.Resolve(spec)
	if err != nil {
		return retry.Policy{}, fmt.Errorf("subscription %s: retry_policy: %w", s.ID, err)
	}
	return p, nil
}

// CompileFilters returns the subscription's advanced filters compiled
// (filter.Compile; nil for none). An error names the subscription and
// advanced_filters.
func (s *Subscription) CompileFilters() (*filter.Matcher, error) {
	m, err := filter.Compile(s.Filters.Advanced)
	if err != nil {
		return nil, fmt.Errorf("subscription %s: advanced_filters: %w", s.ID, err)
	}
	return m, nil
}

// checkCompiles refuses a subscription whose retry policy or filters do
// not compile (what the catalog will make of it), naming retry_policy or
// the policy's field at fault.
func checkCompiles(sub *Subscription) *strictjson.Error {
	_, err := sub.ResolvePolicy()
	if err == nil {
		_, err = sub.CompileFilters()
	}
	if err == nil {
		return nil
	}
	var fe *retry.FieldError
	if errors.As(err, &fe) {
		return badInput("retry_policy."+fe.Field, "%s", fe.Detail)
	}
	return badInput("retry_policy", "%s", err.Error())
}

// CombinationError is a subscription whose fields are each valid but do
// not go together (batches in a schema that carries one event a request).
// The API answers it 422, naming the field.
type CombinationError struct{ Field, Detail string }

func (e *CombinationError) Error() string { return e.Field + ": " + e.Detail }

// checkCombination refuses the settings a subscription's schema cannot
// carry.
func checkCombination(sub *Subscription) *CombinationError {
	if err := checkBrokerCombination(sub); err != nil {
		return err
	}
	schema := cmp.Or(sub.Delivery.Schema, event.SchemaCloudEvents)
	if !event.CanBatch(schema) && sub.Delivery.MaxEventsPerBatch > 1 {
		return &CombinationError{Field: "max_events_per_batch", Detail: fmt.Sprintf(
			"the %s schema carries one event a request: batches need delivery_schema cloudevents or eventgrid", schema)}
	}
	switch v := sub.Delivery.Validation; {
	case v == ValidationEventGrid && schema != event.SchemaEventGrid:
		return &CombinationError{Field: "validation", Detail: "the eventgrid handshake goes with delivery_schema eventgrid, not " + schema}
	case v == ValidationCloudEvents && schema != event.SchemaCloudEvents && schema != event.SchemaCloudEventsBinary:
		return &CombinationError{Field: "validation", Detail: "the cloudevents handshake goes with delivery_schema cloudevents or cloudevents-binary, not " + schema}
	}
	return nil
}

// DestinationError is a subscription URL whose host the destination guard
// refuses (destination.Guard.Check). The API answers it 422, naming the
// field.
type DestinationError struct{ Field, Detail string }

func (e *DestinationError) Error() string { return e.Field + ": " + e.Detail }

// CheckDestination refuses a URL in field (already checked by checkURL)
// whose host g refuses: a literal address the policy does not allow, a
// loopback or local network's name, or a name that resolves now only to
// refused addresses (see destination.Guard.Check; a name that does not
// resolve is accepted, and the dispatcher checks the address of every
// connection it makes).
func CheckDestination(ctx context.Context, g destination.Guard, field, s string) *DestinationError {
	u, err := url.Parse(s)
	if err != nil {
		return nil // checkURL refused it already
	}
	host := strconv.Quote(u.Hostname())
	switch err := g.Check(ctx, u.Hostname()).(type) {
	case *destination.BlockedError:
		article := "a"
		if strings.ContainsAny(err.Class.Name[:1], "aeiou") {
			article = "an"
		}
		return &DestinationError{Field: field, Detail: fmt.Sprintf(
			"the host %s is %s %s address (%s), which Herald does not deliver to by default; to allow it, %s",
			host, article, err.Class.Name, err.Range, err.Hint())}
	case *destination.NameBlockedError:
		return &DestinationError{Field: field, Detail: fmt.Sprintf("the host %s %s; to allow it, %s", host, err.Reason(), err.Hint())}
	}
	return nil
}

// SigningInput is the signing member of a create: the algorithm
// (hmac-sha256, the default, or ed25519) and, for hmac-sha256, the secret
// to start with (whsec_…; made when absent).
type SigningInput struct {
	Algorithm *string `json:"algorithm"`
	Secret    *string `json:"secret"`
}

// newKeyring returns the signing keys of a new subscription from in (nil:
// the defaults).
func newKeyring(in *SigningInput) (signing.Keyring, *strictjson.Error) {
	alg := signing.HMACSHA256
	if in != nil && in.Algorithm != nil {
		alg = *in.Algorithm
		if alg != signing.HMACSHA256 && alg != signing.Ed25519 {
			return signing.Keyring{}, badInput("signing.algorithm", "must be %s or %s, not %s", signing.HMACSHA256, signing.Ed25519, strictjson.Shorten(alg))
		}
	}
	if in != nil && in.Secret != nil {
		if alg != signing.HMACSHA256 {
			return signing.Keyring{}, badInput("signing.secret", "can be given only for %s: an %s key is made by Herald, which keeps the private key", signing.HMACSHA256, alg)
		}
		key, err := signing.ParseSecret(*in.Secret)
		if err != nil {
			return signing.Keyring{}, badInput("signing.secret", "%s", err.Error())
		}
		return signing.Keyring{Algorithm: alg, Keys: []signing.Key{{Key: key}}}, nil
	}
	sg, err := signing.NewSigning(alg)
	if err != nil {
		return signing.Keyring{}, badInput("signing", "%s", err.Error())
	}
	return sg, nil
}

// randomToken is an unguessable token: 32 random bytes, URL-safe base64.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
