package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-events/herald/internal/account"
	"github.com/herald-events/herald/internal/store"
)

// ConsoleSessionsFrom is the schema version before the one that made
// console_sessions: RunUpgrades opens ConsoleSessionsData written at it.
const ConsoleSessionsFrom = 11

// ConsoleSessionsData is written into a database at schema version
// ConsoleSessionsFrom: the installation's endpoint key (which the store
// made when it applied version 11), an account and an account key. Both
// byte strings are 32-character ASCII literals, which both stores take as
// those 32 bytes.
const ConsoleSessionsData = `
DROP TABLE endpoint_rekey;
INSERT INTO installation_keys (name, key) VALUES ('endpoint_id', 'endpoint-key-0123456789abcdef012');
INSERT INTO accounts (id, name, settings, created_at, updated_at)
VALUES ('acc_000000000000000000000sess', 'sessions', '{"failure_policy":"retry"}', 1767603600000, 1767603600000);
INSERT INTO api_keys (id, account_id, role, name, hash, prefix, created_at)
VALUES ('key_00000000000000000000000sess', 'acc_000000000000000000000sess', 'account', 'console',
	'key-hash-0123456789abcdef0123456', 'hk_upgraded', 1767603600000);
`

// CheckConsoleSessionsUpgrade checks a store opened on a database at
// ConsoleSessionsFrom holding ConsoleSessionsData: the account and key are
// kept, and sessions work (made, read, touched, bounded, deleted when
// idle) for that key.
func CheckConsoleSessionsUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	k, err := s.GetKey(ctx, "key_00000000000000000000000sess")
	if err != nil || k.AccountID != "acc_000000000000000000000sess" || k.Role != account.RoleAccount {
		t.Fatalf("key after the upgrade: %+v, %v", k, err)
	}
	at := time.UnixMilli(1767603600000).UTC()
	sess := store.Session{Hash: []byte("0123456789abcdef0123456789abcdef"), KeyHash: k.Hash, KeyID: k.ID, CreatedAt: at, LastSeenAt: at}
	second := sess
	second.Hash, second.LastSeenAt = []byte("second-session-hash-0123456789ab"), at.Add(time.Minute)
	for _, s2 := range []store.Session{sess, second} {
		if err := s.CreateSession(ctx, s2, 1); err != nil {
			t.Fatalf("CreateSession after the upgrade: %v", err)
		}
	}
	if _, err := s.GetSession(ctx, sess.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the key's first session after its second (one a key): %v; want ErrNotFound", err)
	}
	if err := s.TouchSession(ctx, second.Hash, at.Add(time.Hour), at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSession(ctx, second.Hash)
	second.LastSeenAt = at.Add(time.Hour)
	equal(t, "session after the upgrade", got, second)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteIdleSessions(ctx, at.Add(2*time.Hour)); err != nil || n != 1 {
		t.Fatalf("DeleteIdleSessions after the upgrade = %d, %v; want 1", n, err)
	}
}

// PortalSessionsFrom is the schema version before the one that gave
// console_sessions its portal columns: RunUpgrades opens
// PortalSessionsData written at it.
const PortalSessionsFrom = 14

// PortalSessionsData is ConsoleSessionsData and a console session of its
// key, written at schema version PortalSessionsFrom.
const PortalSessionsData = ConsoleSessionsData + `
INSERT INTO console_sessions (hash, key_hash, key_id, created_at, last_seen_at)
VALUES ('console-session-hash-0123456789a', 'key-hash-0123456789abcdef0123456', 'key_00000000000000000000000sess',
	1767603600000, 1767603600000);
`

// CheckPortalSessionsUpgrade checks a store opened on a database at
// PortalSessionsFrom holding PortalSessionsData: the console session is
// kept as one, and portal sessions work beside it (made with a bound of
// one a key that leaves it, opened once, deleted when expired).
func CheckPortalSessionsUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	at := time.UnixMilli(1767603600000).UTC()
	k, err := s.GetKey(ctx, "key_00000000000000000000000sess")
	if err != nil {
		t.Fatal(err)
	}
	// The stored console session's hash is text to SQLite, which no []byte
	// matches: the clean-up's count shows it kept and taken as a console
	// session (idle, not expired).
	link := store.Session{Hash: []byte("portal-link-hash-0123456789abcde"), KeyHash: k.Hash, KeyID: k.ID, CreatedAt: at, LastSeenAt: at,
		Portal: &store.PortalScope{AccountID: k.AccountID, SubscriptionIDs: []string{"sub_x"}, ExpiresAt: at.Add(time.Hour)}}
	if err := s.CreateSession(ctx, link, 1); err != nil {
		t.Fatalf("CreateSession of a portal session after the upgrade: %v", err)
	}
	opened, err := s.OpenPortalSession(ctx, link.Hash, []byte("portal-session-hash-0123456789ab"), at.Add(time.Minute))
	if err != nil || opened.Portal == nil || opened.Portal.AccountID != k.AccountID || !opened.Portal.OpenedAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("OpenPortalSession after the upgrade = %+v, %v", opened, err)
	}
	if _, err := s.OpenPortalSession(ctx, link.Hash, []byte("another-session-hash-0123456789a"), at.Add(time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second OpenPortalSession after the upgrade: %v; want ErrNotFound", err)
	}
	if n, err := s.DeleteIdleSessions(ctx, at.Add(2*time.Hour)); err != nil || n != 2 {
		t.Fatalf("DeleteIdleSessions after the upgrade = %d, %v; want 2 (idle and expired)", n, err)
	}
}
