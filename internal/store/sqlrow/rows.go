package sqlrow

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/health"
	"github.com/herald-events/herald/internal/signing"
	"github.com/herald-events/herald/internal/store"
	"github.com/herald-events/herald/internal/subscription"
)

// Row codecs: both SQL stores keep subscriptions and endpoints in
// the same columns, in the same order (times as Unix milliseconds, lists and
// maps as JSON text).

// RowScanner is a database row: *sql.Row, *sql.Rows, pgx.Row.
type RowScanner interface {
	Scan(dest ...any) error
}

// ScanSubscription reads the columns id, account_id, name, url, endpoint_id,
// event_types, subject_begins_with, subject_ends_with, retry_policy,
// timeout_ms, headers, secret_headers, signing, dead_letter, state, delivery_mode, failure_policy,
// delivery, dead_letter_endpoint_id, filters, created_at, updated_at, version,
// state_reason. SubscriptionValues writes every one of them but the version
// and state_reason, which the store writes itself (state_reason with the
// state: ReactivateSubscription, a deactivation).
//
// delivery holds the subscription.DeliveryOptions as JSON ('{}': the defaults): they
// are read with the subscription and never queried, so one column keeps
// them without a migration per option. dead_letter_endpoint_id is derived
// from it (DeadLetterEndpointID) and kept in a column of its own because
// it is queried (the endpoint rows a subscription keeps alive, the
// endpoint of its dead letters). filters holds the subscription.FilterOptions the
// same way ('{}': none), written by encodeFilters.
func ScanSubscription(sc RowScanner) (subscription.Subscription, error) {
	var s subscription.Subscription
	var types, headers, secretHeaders, signing, delivery, filters string
	var timeout, created, updated int64
	if err := sc.Scan(&s.ID, &s.AccountID, &s.Name, &s.URL, &s.EndpointID, &types, &s.SubjectBeginsWith, &s.SubjectEndsWith,
		&s.RetryPolicy, &timeout, &headers, &secretHeaders, &signing, &s.DeadLetter, &s.State, &s.DeliveryMode, &s.FailurePolicy,
		&delivery, &s.DeadLetterEndpointID, &filters, &created, &updated, &s.Version, &s.StateReason); err != nil {
		return subscription.Subscription{}, err
	}
	if err := json.Unmarshal([]byte(types), &s.EventTypes); err != nil {
		return subscription.Subscription{}, fmt.Errorf("subscription %s: event_types: %w", s.ID, err)
	}
	if err := json.Unmarshal([]byte(headers), &s.Headers); err != nil {
		return subscription.Subscription{}, fmt.Errorf("subscription %s: headers: %w", s.ID, err)
	}
	if err := json.Unmarshal([]byte(secretHeaders), &s.SecretHeaders); err != nil {
		return subscription.Subscription{}, fmt.Errorf("subscription %s: secret_headers: %w", s.ID, err)
	}
	if err := json.Unmarshal([]byte(delivery), &s.Delivery); err != nil {
		return subscription.Subscription{}, fmt.Errorf("subscription %s: delivery: %w", s.ID, err)
	}
	if err := json.Unmarshal([]byte(filters), &s.Filters); err != nil {
		return subscription.Subscription{}, fmt.Errorf("subscription %s: filters: %w", s.ID, err)
	}
	sg, err := DecodeSigning(signing)
	if err != nil {
		return subscription.Subscription{}, fmt.Errorf("subscription %s: signing: %w", s.ID, err)
	}
	s.Signing = sg
	s.Timeout = time.Duration(timeout) * time.Millisecond
	s.CreatedAt, s.UpdatedAt = FromUnixMS(created), FromUnixMS(updated)
	return s, nil
}

// SubscriptionValues returns s's columns in ScanSubscription's order without
// the ID and the version (account_id … updated_at), after setting in s what
// the store fills in: an empty AccountID as account.DefaultID, an empty
// DeliveryMode and FailurePolicy as their defaults, and the endpoint IDs
// made with the installation's key: EndpointID (key.ID of the account and
// URL for a push subscription, "" for a pull one) and DeadLetterEndpointID
// (DeadLetterEndpointID), whatever they held.
func SubscriptionValues(s *subscription.Subscription, key endpoint.Key) ([]any, error) {
	types, err := json.Marshal(s.EventTypes)
	if err != nil {
		return nil, err
	}
	headers, err := json.Marshal(s.Headers)
	if err != nil {
		return nil, err
	}
	secretHeaders, err := json.Marshal(s.SecretHeaders)
	if err != nil {
		return nil, err
	}
	delivery, err := json.Marshal(s.Delivery)
	if err != nil {
		return nil, err
	}
	filters, err := encodeFilters(s.Filters)
	if err != nil {
		return nil, fmt.Errorf("subscription %s: %w", s.ID, err)
	}
	s.AccountID = account.OrDefault(s.AccountID)
	if s.DeliveryMode == "" {
		s.DeliveryMode = subscription.ModePush
	}
	if s.FailurePolicy == "" {
		s.FailurePolicy = subscription.FailureRetry
	}
	s.EndpointID = ""
	if s.DeliveryMode == subscription.ModePush {
		s.EndpointID = key.ID(s.AccountID, s.URL)
	}
	s.DeadLetterEndpointID = DeadLetterEndpointID(s, key)
	return []any{s.AccountID, s.Name, s.URL, s.EndpointID, string(types), s.SubjectBeginsWith, s.SubjectEndsWith,
		s.RetryPolicy, s.Timeout.Milliseconds(), string(headers), string(secretHeaders), EncodeSigning(s.Signing),
		s.DeadLetter, s.State, s.DeliveryMode, s.FailurePolicy, string(delivery), s.DeadLetterEndpointID, filters,
		UnixMS(s.CreatedAt), UnixMS(s.UpdatedAt)}, nil
}

// encodeFilters is the filters column's value of f: a JSON object, '{}'
// for none, {"advanced": …, "subject_case_sensitive": true, "expression":
// "…"} otherwise (each key only when set). Advanced goes in as written,
// not re-encoded as json.Marshal would (compacted, with <, > and & escaped), so that
// ScanSubscription reads back the same bytes; it must be one JSON value,
// without white space around it (which would not be kept).
func encodeFilters(f subscription.FilterOptions) (string, error) {
	b := []byte{'{'}
	if len(f.Advanced) > 0 {
		if !json.Valid(f.Advanced) {
			return "", errors.New("filters: advanced is not JSON")
		}
		b = append(append(b, `"advanced":`...), f.Advanced...)
	}
	if f.SubjectCaseSensitive {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, `"subject_case_sensitive":true`...)
	}
	if f.Expression != "" {
		if len(b) > 1 {
			b = append(b, ',')
		}
		q, err := json.Marshal(f.Expression)
		if err != nil {
			return "", err
		}
		b = append(append(b, `"expression":`...), q...)
	}
	return string(append(b, '}')), nil
}

// DeadLetterEndpointID is the subscriptions.dead_letter_endpoint_id of s:
// the endpoint of its dead-letter URL in its account (key.ID), or "" when
// it has none (deadLetterURL).
//
// An endpoint row lives while a subscription uses its URL as its URL or as
// its dead-letter URL: a subscription write creates the row of either when
// it is new, and deletes the row of one it stopped using when no
// subscription uses it in either way.
func DeadLetterEndpointID(s *subscription.Subscription, key endpoint.Key) string {
	if u := deadLetterURL(s); u != "" {
		return key.ID(s.AccountID, u)
	}
	return ""
}

// deadLetterURL is s's dead-letter URL that has an endpoint, or "". Only
// a push subscription has one (subscription.DeliveryOptions.DeadLetterURL), as
// only a push subscription has an endpoint.
func deadLetterURL(s *subscription.Subscription) string {
	if s.DeliveryMode != "" && s.DeliveryMode != subscription.ModePush {
		return ""
	}
	return s.Delivery.DeadLetterURL
}

// LegacyEndpointID is the endpoint ID releases before schema 11 made
// (endpoint.Key.ID replaced it): "ep_" and 20 base32 characters of an
// unkeyed SHA-256 of the account and the URL (of the URL alone in
// account.DefaultID). Only schema 8's backfill makes such IDs, which
// schema 11 then replaces with keyed ones (RekeyEndpoints).
func LegacyEndpointID(accountID, url string) string {
	var sum [sha256.Size]byte
	if accountID == "" || accountID == account.DefaultID {
		sum = sha256.Sum256([]byte(url))
	} else {
		sum = sha256.Sum256([]byte(accountID + "\x00" + url))
	}
	return "ep_" + legacyIDEncoding.EncodeToString(sum[:])[:20]
}

// legacyIDEncoding is Crockford's base32 in lower case, as internal/ids
// writes it.
var legacyIDEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// ReasonDeadLetterURLRemoved drops the deliveries of dead letters still to
// be made (pending or queued) of a subscription whose dead-letter URL was
// removed: there is nowhere left to send them (the dead-lettered
// deliveries themselves stay dead-lettered).
const ReasonDeadLetterURLRemoved = "DeadLetterURLRemoved"

// BackfillDeadLettersSQL selects, for BackfillDeadLetters, the
// subscriptions whose delivery options are not the defaults (those written
// before schema 8 may name a dead-letter URL): id, account_id,
// delivery_mode, delivery, updated_at.
const BackfillDeadLettersSQL = `SELECT id, account_id, delivery_mode, delivery, updated_at FROM subscriptions
WHERE delivery <> '{}' ORDER BY id`

// DeadLetterEndpoint is a dead-letter endpoint BackfillDeadLetters found:
// the subscription naming it, and the endpoint row's values (created at
// the subscription's UpdatedAt, in Unix milliseconds).
type DeadLetterEndpoint struct {
	Subscription string
	ID           string
	AccountID    string
	URL          string
	CreatedAt    int64
}

// BackfillDeadLetters reads the rows of BackfillDeadLettersSQL and returns
// the dead-letter endpoint of each subscription that names one. Schema 8
// runs it in its migration's transaction, sets each subscription's
// dead_letter_endpoint_id and creates the endpoint rows that do not exist
// yet, so that the dead-letter URLs stored with schema 7 get their
// endpoints. The IDs are the ones of that release (LegacyEndpointID): the
// other endpoints' are too, until schema 11 keys them all.
func BackfillDeadLetters(rows interface {
	Next() bool
	RowScanner
	Err() error
}) ([]DeadLetterEndpoint, error) {
	var out []DeadLetterEndpoint
	for rows.Next() {
		var s subscription.Subscription
		var delivery string
		var updated int64
		if err := rows.Scan(&s.ID, &s.AccountID, &s.DeliveryMode, &delivery, &updated); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(delivery), &s.Delivery); err != nil {
			return nil, fmt.Errorf("subscription %s: delivery: %w", s.ID, err)
		}
		if u := deadLetterURL(&s); u != "" {
			out = append(out, DeadLetterEndpoint{Subscription: s.ID, ID: LegacyEndpointID(s.AccountID, u),
				AccountID: account.OrDefault(s.AccountID), URL: u, CreatedAt: updated})
		}
	}
	return out, rows.Err()
}

// signingRow is the signing column: JSON, keys in base64 with their expiry
// in Unix milliseconds ("" for a subscription written before schema 4
// that has no keys yet).
type signingRow struct {
	Algorithm string `json:"algorithm"`
	Keys      []struct {
		Key       []byte `json:"key"`
		ExpiresAt int64  `json:"expires_at,omitempty"`
	} `json:"keys"`
}

// EncodeSigning is the signing column's value of sg ("" without keys).
func EncodeSigning(sg signing.Keyring) string {
	if len(sg.Keys) == 0 {
		return ""
	}
	r := signingRow{Algorithm: sg.Algorithm}
	r.Keys = make([]struct {
		Key       []byte `json:"key"`
		ExpiresAt int64  `json:"expires_at,omitempty"`
	}, len(sg.Keys))
	for i, k := range sg.Keys {
		r.Keys[i].Key, r.Keys[i].ExpiresAt = k.Key, UnixMS(k.ExpiresAt)
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// DecodeSigning reads the signing column.
func DecodeSigning(v string) (signing.Keyring, error) {
	if v == "" {
		return signing.Keyring{}, nil
	}
	var r signingRow
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return signing.Keyring{}, err
	}
	sg := signing.Keyring{Algorithm: r.Algorithm, Keys: make([]signing.Key, len(r.Keys))}
	for i, k := range r.Keys {
		sg.Keys[i] = signing.Key{Key: k.Key, ExpiresAt: FromUnixMS(k.ExpiresAt)}
	}
	return sg, nil
}

// BackfillSigningSQL selects the subscriptions without signing keys
// (written before schema 4).
const BackfillSigningSQL = `SELECT id FROM subscriptions WHERE signing = '' ORDER BY id`

// BackfillSigning gives each of ids a new key of alg made by newSigning,
// writing it with set (id, signing column value). Schema 4 runs it in its
// migration's transaction, so that subscriptions made before it sign their
// pushes from the upgrade on.
func BackfillSigning(ids []string, newSigning func() (signing.Keyring, error), set func(id, signing string) error) error {
	for _, id := range ids {
		sg, err := newSigning()
		if err != nil {
			return err
		}
		if err := set(id, EncodeSigning(sg)); err != nil {
			return fmt.Errorf("signing key of subscription %s: %w", id, err)
		}
	}
	return nil
}

// ScanEndpoint reads the columns id, account_id, url, state, consecutive_failures,
// health_window, first_attempt_at, last_success_at, last_failure_at,
// disabled_at, frozen_at, next_probe_at, probation_delay_ms, created_at,
// updated_at, version, state_reason (Health.Reason), rate_per_second,
// rate_burst (RateLimit: none when 0).
func ScanEndpoint(sc RowScanner) (endpoint.Endpoint, error) {
	var e endpoint.Endpoint
	h := &e.Health
	var state, window string
	var first, success, failure, disabled, frozen, probe, delay, created, updated, burst int64
	var rate float64
	if err := sc.Scan(&e.ID, &e.AccountID, &e.URL, &state, &h.ConsecutiveFailures, &window, &first, &success,
		&failure, &disabled, &frozen, &probe, &delay, &created, &updated, &e.Version, &h.Reason, &rate, &burst); err != nil {
		return endpoint.Endpoint{}, err
	}
	if rate > 0 {
		e.RateLimit = &endpoint.RateLimit{PerSecond: rate, Burst: int(burst)}
	}
	if err := json.Unmarshal([]byte(window), &h.Window); err != nil {
		return endpoint.Endpoint{}, fmt.Errorf("endpoint %s: health_window: %w", e.ID, err)
	}
	h.State = health.State(state)
	h.FirstAttemptAt, h.LastSuccessAt, h.LastFailureAt = FromUnixMS(first), FromUnixMS(success), FromUnixMS(failure)
	h.DisabledAt, h.FrozenAt, h.NextProbeAt = FromUnixMS(disabled), FromUnixMS(frozen), FromUnixMS(probe)
	h.ProbationDelay = time.Duration(delay) * time.Millisecond
	e.CreatedAt, e.UpdatedAt = FromUnixMS(created), FromUnixMS(updated)
	return e, nil
}

// HealthRow is an endpoint's health as the health columns hold it, with
// its rate limit (RatePerSecond and RateBurst 0: none). Its JSON names
// are the columns' (a batch of rows is passed to a statement as a JSON
// array).
type HealthRow struct {
	ID            string  `json:"id"`
	State         string  `json:"state"`
	Window        string  `json:"health_window"`
	Reason        string  `json:"state_reason"`
	Failures      int64   `json:"consecutive_failures"`
	First         int64   `json:"first_attempt_at"`
	Success       int64   `json:"last_success_at"`
	Failure       int64   `json:"last_failure_at"`
	Disabled      int64   `json:"disabled_at"`
	Frozen        int64   `json:"frozen_at"`
	Probe         int64   `json:"next_probe_at"`
	DelayMS       int64   `json:"probation_delay_ms"`
	Updated       int64   `json:"updated_at"`
	RateBurst     int64   `json:"rate_burst"`
	RatePerSecond float64 `json:"rate_per_second"`
}

// NewHealthRow encodes e's Health, UpdatedAt and RateLimit for the
// endpoint id. An empty state is stored as enabled.
func NewHealthRow(id string, e *endpoint.Endpoint) (HealthRow, error) {
	h := &e.Health
	window, err := json.Marshal(h.Window)
	if err != nil {
		return HealthRow{}, fmt.Errorf("endpoint %s: health window: %w", id, err)
	}
	state := h.State
	if state == "" {
		state = health.Enabled
	}
	var rate float64
	var burst int64
	if r := e.RateLimit; r != nil {
		rate, burst = r.PerSecond, int64(r.Burst)
	}
	return HealthRow{
		RatePerSecond: rate, RateBurst: burst,
		ID: id, State: string(state), Window: string(window), Reason: h.Reason, Failures: h.ConsecutiveFailures,
		First: UnixMS(h.FirstAttemptAt), Success: UnixMS(h.LastSuccessAt), Failure: UnixMS(h.LastFailureAt),
		Disabled: UnixMS(h.DisabledAt), Frozen: UnixMS(h.FrozenAt), Probe: UnixMS(h.NextProbeAt),
		DelayMS: h.ProbationDelay.Milliseconds(), Updated: UnixMS(e.UpdatedAt),
	}, nil
}

// AccountCols selects a account.Account from accounts; ScanAccount reads them
// in this order.
const AccountCols = `id, name, settings, created_at, updated_at`

// ScanAccount reads AccountCols.
func ScanAccount(sc RowScanner) (account.Account, error) {
	var a account.Account
	var settings string
	var created, updated int64
	if err := sc.Scan(&a.ID, &a.Name, &settings, &created, &updated); err != nil {
		return account.Account{}, err
	}
	if err := json.Unmarshal([]byte(settings), &a.Settings); err != nil {
		return account.Account{}, fmt.Errorf("account %s: settings: %w", a.ID, err)
	}
	a.CreatedAt, a.UpdatedAt = FromUnixMS(created), FromUnixMS(updated)
	return a, nil
}

// AccountValues returns a's columns in AccountCols' order.
func AccountValues(a *account.Account) []any {
	settings, _ := json.Marshal(a.Settings) // a struct of strings
	return []any{a.ID, a.Name, string(settings), UnixMS(a.CreatedAt), UnixMS(a.UpdatedAt)}
}

// KeyCols selects a account.Key from api_keys; ScanKey reads them in this
// order.
const KeyCols = `id, account_id, role, name, hash, prefix, created_at`

// ScanKey reads KeyCols.
func ScanKey(sc RowScanner) (account.Key, error) {
	var k account.Key
	var created int64
	err := sc.Scan(&k.ID, &k.AccountID, &k.Role, &k.Name, &k.Hash, &k.Prefix, &created)
	k.CreatedAt = FromUnixMS(created)
	return k, err
}

// KeyValues returns k's columns in KeyCols' order.
func KeyValues(k *account.Key) []any {
	return []any{k.ID, account.OrDefault(k.AccountID), k.Role, k.Name, k.Hash, k.Prefix, UnixMS(k.CreatedAt)}
}

// SessionCols selects a store.Session from console_sessions; ScanSession
// reads them in this order.
const SessionCols = `hash, key_hash, key_id, created_at, last_seen_at, portal_account, portal_subscriptions, expires_at, opened_at`

// ScanSession reads SessionCols. A row whose portal_account is NULL is a
// console session (Portal nil).
func ScanSession(sc RowScanner) (store.Session, error) {
	var s store.Session
	var created, seen int64
	var acc, subs *string
	var expires, opened *int64
	err := sc.Scan(&s.Hash, &s.KeyHash, &s.KeyID, &created, &seen, &acc, &subs, &expires, &opened)
	s.CreatedAt, s.LastSeenAt = FromUnixMS(created), FromUnixMS(seen)
	if err != nil || acc == nil {
		return s, err
	}
	p := &store.PortalScope{AccountID: *acc}
	if subs != nil {
		if err := json.Unmarshal([]byte(*subs), &p.SubscriptionIDs); err != nil {
			return s, fmt.Errorf("portal_subscriptions: %w", err)
		}
	}
	if expires != nil {
		p.ExpiresAt = FromUnixMS(*expires)
	}
	if opened != nil {
		p.OpenedAt = FromUnixMS(*opened)
	}
	s.Portal = p
	return s, nil
}

// SessionValues returns s's columns in SessionCols' order.
func SessionValues(s *store.Session) []any {
	v := []any{s.Hash, s.KeyHash, s.KeyID, UnixMS(s.CreatedAt), UnixMS(s.LastSeenAt), nil, nil, nil, nil}
	if p := s.Portal; p != nil {
		v[5], v[7] = p.AccountID, UnixMS(p.ExpiresAt)
		if len(p.SubscriptionIDs) > 0 {
			b, _ := json.Marshal(p.SubscriptionIDs) // strings
			v[6] = string(b)
		}
		if !p.OpenedAt.IsZero() {
			v[8] = UnixMS(p.OpenedAt)
		}
	}
	return v
}
