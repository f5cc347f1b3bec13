package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Source is a broker source (schema Source): a consumer of a NATS
// JetStream subject, a RabbitMQ queue, an MQTT topic or a Kafka topic that
// publishes what it reads. Secrets show as xxxxx.
type Source struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Type        string       `json:"type"`
	AccountID   string       `json:"account_id"`
	URL         string       `json:"url,omitempty"`
	Brokers     []string     `json:"brokers,omitempty"`
	TLS         *SourceTLS   `json:"tls,omitempty"`
	SASL        *SourceSASL  `json:"sasl,omitempty"`
	Subject     string       `json:"subject,omitempty"`
	Stream      string       `json:"stream,omitempty"`
	Durable     string       `json:"durable,omitempty"`
	Queue       string       `json:"queue,omitempty"`
	Topic       string       `json:"topic,omitempty"`
	Format      string       `json:"format"`
	Wrap        *SourceWrap  `json:"wrap,omitempty"`
	State       string       `json:"state"`
	Lag         *int64       `json:"lag"`
	LastError   *string      `json:"last_error"`
	LastErrorAt *time.Time   `json:"last_error_at"`
	Counts      SourceCounts `json:"counts"`
	CreatedAt   time.Time    `json:"created_at"`
	UpdatedAt   time.Time    `json:"updated_at"`
}

// SourceCounts are a source's message counts.
type SourceCounts struct {
	Received     int64 `json:"received"`
	Published    int64 `json:"published"`
	Duplicates   int64 `json:"duplicates"`
	DeadLettered int64 `json:"dead_lettered"`
}

// SourceTLS is a Kafka source's TLS (schema SourceTLS).
type SourceTLS struct {
	ServerName string `json:"server_name,omitempty"`
	CAPEM      string `json:"ca_pem,omitempty"`
}

// SourceSASL is a Kafka source's SASL authentication (schema SourceSASL).
type SourceSASL struct {
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

// SourceWrap is the type and source of a raw source's events.
type SourceWrap struct {
	Type   string `json:"type"`
	Source string `json:"source"`
}

// SourceInput is the body of Sources.Create and Sources.Update (schema
// SourceInput): nil fields are left out (on create, their default; on
// update, their value kept). Remove names the members an update removes,
// sent as null: "tls", "sasl" or "wrap" (a raw source made to read
// CloudEvents removes its wrap).
type SourceInput struct {
	Name      *string     `json:"name,omitempty"`
	Type      *string     `json:"type,omitempty"`
	AccountID *string     `json:"account_id,omitempty"`
	URL       *string     `json:"url,omitempty"`
	Brokers   *[]string   `json:"brokers,omitempty"`
	TLS       *SourceTLS  `json:"tls,omitempty"`
	SASL      *SourceSASL `json:"sasl,omitempty"`
	Subject   *string     `json:"subject,omitempty"`
	Stream    *string     `json:"stream,omitempty"`
	Durable   *string     `json:"durable,omitempty"`
	Queue     *string     `json:"queue,omitempty"`
	Topic     *string     `json:"topic,omitempty"`
	Format    *string     `json:"format,omitempty"`
	Wrap      *SourceWrap `json:"wrap,omitempty"`
	Remove    []string    `json:"-"`
}

// MarshalJSON writes in's members, and null for each member Remove names.
func (in SourceInput) MarshalJSON() ([]byte, error) {
	type plain SourceInput // without this method
	b, err := json.Marshal(plain(in))
	if err != nil || len(in.Remove) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, name := range in.Remove {
		if _, set := m[name]; set {
			return nil, fmt.Errorf("herald: SourceInput sets %s and removes it", name)
		}
		m[name] = json.RawMessage("null")
	}
	return json.Marshal(m)
}

// SourceDeadLetter is a message a source could not publish (schema
// SourceDeadLetter).
type SourceDeadLetter struct {
	ID         string    `json:"id"`
	SourceID   string    `json:"source_id"`
	MessageID  string    `json:"message_id"`
	Reason     string    `json:"reason"`
	BodyBase64 []byte    `json:"body_base64"`
	Size       int64     `json:"size"`
	Truncated  bool      `json:"truncated"`
	ReceivedAt time.Time `json:"received_at"`
}

// SourcesService calls /v1/sources (admin keys only).
type SourcesService struct{ c *Client }

// Create makes a source (POST /v1/sources).
func (s *SourcesService) Create(ctx context.Context, in SourceInput) (*Source, error) {
	return doJSON[Source](ctx, s.c, call{op: opCreateSource, body: in})
}

// List returns one page of the sources (GET /v1/sources).
func (s *SourcesService) List(ctx context.Context, p ListParams) (*Page[Source], error) {
	return doJSON[Page[Source]](ctx, s.c, call{op: opListSources, query: p.values()})
}

// Get returns a source with its state and counts (GET /v1/sources/{id}).
func (s *SourcesService) Get(ctx context.Context, id string) (*Source, error) {
	return doJSON[Source](ctx, s.c, call{op: opGetSource, ids: []string{id}})
}

// Update changes a source (PATCH /v1/sources/{id}).
func (s *SourcesService) Update(ctx context.Context, id string, in SourceInput) (*Source, error) {
	return doJSON[Source](ctx, s.c, call{op: opUpdateSource, ids: []string{id}, body: in})
}

// Delete deletes a source and its dead letters (DELETE /v1/sources/{id}).
func (s *SourcesService) Delete(ctx context.Context, id string) error {
	return s.c.do(ctx, call{op: opDeleteSource, ids: []string{id}})
}

// Pause stops a source's consumer (POST /v1/sources/{id}/pause).
func (s *SourcesService) Pause(ctx context.Context, id string) (*Source, error) {
	return doJSON[Source](ctx, s.c, call{op: opPauseSource, ids: []string{id}})
}

// Resume starts a paused source's consumer again (POST
// /v1/sources/{id}/resume).
func (s *SourcesService) Resume(ctx context.Context, id string) (*Source, error) {
	return doJSON[Source](ctx, s.c, call{op: opResumeSource, ids: []string{id}})
}

// DeadLetters returns one page of a source's dead letters (GET
// /v1/sources/{id}/dead-letters).
func (s *SourcesService) DeadLetters(ctx context.Context, id string, p ListParams) (*Page[SourceDeadLetter], error) {
	return doJSON[Page[SourceDeadLetter]](ctx, s.c, call{op: opListSourceDLs, ids: []string{id}, query: p.values()})
}
