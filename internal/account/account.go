// Package account holds Herald's tenants and their API keys: the Account
// and Key types, the roles a key may have, and the default account that
// everything written without an account belongs to.
package account

import "time"

// DefaultID is the account that always exists: everything written
// without an account (and everything written before accounts existed)
// belongs to it, so a user with one tenant never names one. An empty
// AccountID in any value handed to the store means DefaultID.
const DefaultID = "acc_default"

// OrDefault returns id, or DefaultID when id is empty.
func OrDefault(id string) string {
	if id == "" {
		return DefaultID
	}
	return id
}

// Account is a tenant: everything else belongs to one.
type Account struct {
	ID        string
	Name      string
	Settings  Settings
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Settings are an account's defaults for its subscriptions.
type Settings struct {
	// FailurePolicy is "retry" (the default: a failed push is retried on
	// the subscription's retry policy) or "queue".
	FailurePolicy string `json:"failure_policy"`
	// PortalEventTypes, when not empty, are the only event types the
	// subscriber portal lets the account's subscriptions take
	// (internal/console's portal; checked in portal.go).
	PortalEventTypes []string `json:"portal_event_types,omitempty"`
	// PortalFrameAncestors are the origins whose pages may show the
	// account's portal in a frame (CSP frame-ancestors); none: no page may.
	PortalFrameAncestors []string `json:"portal_frame_ancestors,omitempty"`
	// SchemaValidation is how the account's events are checked against
	// the event-type catalog's schemas at publish: "off" (the default,
	// also when empty), "warn" or "enforce" (internal/eventtype's modes;
	// checked in schemas.go).
	SchemaValidation string `json:"schema_validation,omitempty"`
	// CatalogOnly: the account publishes, and its subscriptions take,
	// only the types of the event-type catalog.
	CatalogOnly bool `json:"catalog_only,omitempty"`
}

// Key roles.
const (
	// RoleAdmin manages accounts and keys and acts in every account.
	RoleAdmin = "admin"
	// RoleAccount does everything inside its own account.
	RoleAccount = "account"
	// RolePublish only publishes events in its account.
	RolePublish = "publish"
)

// ValidRole reports whether role is one of RoleAdmin, RoleAccount,
// RolePublish.
func ValidRole(role string) bool {
	return role == RoleAdmin || role == RoleAccount || role == RolePublish
}

// Key is an API key as stored: never the key itself, only its SHA-256.
type Key struct {
	ID        string
	AccountID string
	Role      string
	Name      string
	Hash      []byte
	// Prefix is the key's first characters, shown in lists so a user can
	// tell keys apart without the secret.
	Prefix    string
	CreatedAt time.Time
}
