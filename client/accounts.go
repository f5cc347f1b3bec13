package client

import (
	"context"
	"time"
)

// Account is a tenant (schema Account).
type Account struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Settings  AccountSettings `json:"settings"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// AccountSettings are an account's settings (schema AccountSettings).
type AccountSettings struct {
	// FailurePolicy is the default failure_policy of its subscriptions:
	// "retry" or "queue".
	FailurePolicy        string   `json:"failure_policy"`
	PortalEventTypes     []string `json:"portal_event_types,omitempty"`
	PortalFrameAncestors []string `json:"portal_frame_ancestors,omitempty"`
	// SchemaValidation is "off", "warn" or "enforce": how the account's
	// events are checked against the event-type catalog at publish.
	SchemaValidation string `json:"schema_validation"`
	// CatalogOnly: the account publishes, and subscribes to, catalog
	// types only.
	CatalogOnly bool `json:"catalog_only"`
}

// AccountSettingsInput are settings to set (schema AccountSettingsInput):
// nil fields take their default at create and keep their value at update.
type AccountSettingsInput struct {
	FailurePolicy        *string   `json:"failure_policy,omitempty"`
	PortalEventTypes     *[]string `json:"portal_event_types,omitempty"`
	PortalFrameAncestors *[]string `json:"portal_frame_ancestors,omitempty"`
	SchemaValidation     *string   `json:"schema_validation,omitempty"`
	CatalogOnly          *bool     `json:"catalog_only,omitempty"`
}

// AccountInput is the body of Accounts.Create (schema AccountCreate).
type AccountInput struct {
	Name     string                `json:"name"`
	Settings *AccountSettingsInput `json:"settings,omitempty"`
}

// AccountUpdate is the body of Accounts.Update (schema AccountUpdate):
// nil fields keep their value.
type AccountUpdate struct {
	Name     *string               `json:"name,omitempty"`
	Settings *AccountSettingsInput `json:"settings,omitempty"`
}

// AccountsService calls /v1/accounts (admin keys only).
type AccountsService struct{ c *Client }

// Create makes an account (POST /v1/accounts).
func (s *AccountsService) Create(ctx context.Context, in AccountInput) (*Account, error) {
	return doJSON[Account](ctx, s.c, call{op: opCreateAccount, body: in})
}

// List returns one page of accounts (GET /v1/accounts).
func (s *AccountsService) List(ctx context.Context, p ListParams) (*Page[Account], error) {
	return doJSON[Page[Account]](ctx, s.c, call{op: opListAccounts, query: p.values()})
}

// Get returns the account id (GET /v1/accounts/{id}).
func (s *AccountsService) Get(ctx context.Context, id string) (*Account, error) {
	return doJSON[Account](ctx, s.c, call{op: opGetAccount, ids: []string{id}})
}

// Update changes the account id (PATCH /v1/accounts/{id}).
func (s *AccountsService) Update(ctx context.Context, id string, in AccountUpdate) (*Account, error) {
	return doJSON[Account](ctx, s.c, call{op: opUpdateAccount, ids: []string{id}, body: in})
}

// Delete removes the account id and its keys (DELETE /v1/accounts/{id});
// an account with subscriptions, or acc_default, is a 409 Problem.
func (s *AccountsService) Delete(ctx context.Context, id string) error {
	return s.c.do(ctx, call{op: opDeleteAccount, ids: []string{id}})
}
