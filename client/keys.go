package client

import (
	"context"
	"time"
)

// APIKey is an API key without the key itself (schema APIKey).
type APIKey struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	// Role is "admin", "account" or "publish".
	Role string `json:"role"`
	Name string `json:"name"`
	// Prefix is the key's first characters, which tell keys apart.
	Prefix    string    `json:"prefix"`
	CreatedAt time.Time `json:"created_at"`
}

// CreatedAPIKey is a key just made (schema APIKeyCreated): Key is the key,
// shown only in this answer.
type CreatedAPIKey struct {
	APIKey
	Key string `json:"key"`
}

// APIKeyInput is the body of Keys.Create (schema APIKeyCreate).
type APIKeyInput struct {
	// AccountID is the account of the key; "" for the account the request
	// acts in.
	AccountID string `json:"account_id,omitempty"`
	Role      string `json:"role"`
	Name      string `json:"name,omitempty"`
}

// KeysService calls /v1/keys.
type KeysService struct{ c *Client }

// Create makes a key (POST /v1/keys).
func (s *KeysService) Create(ctx context.Context, in APIKeyInput) (*CreatedAPIKey, error) {
	return doJSON[CreatedAPIKey](ctx, s.c, call{op: opCreateKey, body: in})
}

// List returns one page of the account's keys (GET /v1/keys).
func (s *KeysService) List(ctx context.Context, p ListParams) (*Page[APIKey], error) {
	return doJSON[Page[APIKey]](ctx, s.c, call{op: opListKeys, query: p.values()})
}

// Delete revokes the key id (DELETE /v1/keys/{id}).
func (s *KeysService) Delete(ctx context.Context, id string) error {
	return s.c.do(ctx, call{op: opDeleteKey, ids: []string{id}})
}
