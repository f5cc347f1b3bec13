package account_test

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/strictjson"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := strictjson.Decode([]byte(body), "", &v); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return v
}

// TestAccountInput: a new account needs a name and retries by default; an
// update changes only what it sends; problems name their field.
func TestAccountInput(t *testing.T) {
	a, err := decode[account.Input](t, `{"name":"billing"}`).New("acc_1", t0)
	if err != nil || a.ID != "acc_1" || a.Name != "billing" || a.Settings.FailurePolicy != "retry" || !a.CreatedAt.Equal(t0) {
		t.Fatalf("New = %+v, %v; want billing, failure policy retry", a, err)
	}
	if err := decode[account.Input](t, `{"settings":{"failure_policy":"queue"}}`).Apply(&a); err != nil ||
		a.Name != "billing" || a.Settings.FailurePolicy != "queue" {
		t.Fatalf("Apply = %+v, %v; want billing, failure policy queue", a, err)
	}
	for body, field := range map[string]string{
		`{}`:           "name",
		`{"name":" "}`: "name",
		`{"name":"a","settings":{"failure_policy":"drop"}}`: "settings.failure_policy",
	} {
		if _, err := decode[account.Input](t, body).New("acc_2", t0); err == nil || err.Field != field {
			t.Errorf("New(%s) = %v; want a problem naming %s", body, err, field)
		}
	}
}

// TestKeyInput: a key belongs to the request's account unless it names
// another, needs a valid role, and an admin key only belongs to the
// default account.
func TestKeyInput(t *testing.T) {
	k, err := decode[account.KeyInput](t, `{"role":"publish","name":"ci"}`).Spec("acc_1")
	if err != nil || k != (account.KeySpec{AccountID: "acc_1", Role: account.RolePublish, Name: "ci"}) {
		t.Fatalf("Spec = %+v, %v; want a publish key of acc_1 named ci", k, err)
	}
	if err := k.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	for body, field := range map[string]string{
		`{"role":"publish","account_id":""}`: "account_id",
		`{"name":"x"}`:                       "role",
		`{"role":"owner"}`:                   "role",
		`{"role":"publish","name":"` + strings.Repeat("x", 201) + `"}`: "name",
	} {
		if _, err := decode[account.KeyInput](t, body).Spec("acc_1"); err == nil || err.Field != field {
			t.Errorf("Spec(%s) = %v; want a problem naming %s", body, err, field)
		}
	}
	admin, err := decode[account.KeyInput](t, `{"role":"admin"}`).Spec("acc_1")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Check(); err == nil || err.Field != "role" {
		t.Fatalf("an admin key of acc_1: %v, want a problem naming role", err)
	}
	admin.AccountID = account.DefaultID
	if err := admin.Check(); err != nil {
		t.Fatalf("an admin key of the default account: %v", err)
	}
}

// TestSchemaSettings: schema_validation takes off, warn or enforce (off
// when never set), catalog_only a bool; a bad mode names its field and
// changes nothing.
func TestSchemaSettings(t *testing.T) {
	a, err := decode[account.Input](t, `{"name":"billing"}`).New("acc_1", t0)
	if err != nil || a.Settings.Validation() != "off" || a.Settings.CatalogOnly {
		t.Fatalf("New = %+v, %v; want validation off, catalog_only false", a.Settings, err)
	}
	if err := decode[account.Input](t, `{"settings":{"schema_validation":"enforce","catalog_only":true}}`).Apply(&a); err != nil ||
		a.Settings.Validation() != "enforce" || !a.Settings.CatalogOnly {
		t.Fatalf("Apply = %+v, %v; want enforce, catalog_only", a.Settings, err)
	}
	err = decode[account.Input](t, `{"settings":{"schema_validation":"strict"}}`).Apply(&a)
	if err == nil || err.Field != "settings.schema_validation" || a.Settings.Validation() != "enforce" {
		t.Fatalf("Apply(strict) = %v, %+v; want a problem naming settings.schema_validation, enforce kept", err, a.Settings)
	}
}
