package sqlrow

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/herald-events/herald/internal/endpoint"
	"github.com/herald-events/herald/internal/redact"
	"github.com/herald-events/herald/internal/subscription"
)

// EndpointKeyMigration is the migration that keyed endpoint IDs (schema
// version 11): after its SQL (the installation_keys table, and the
// endpoint_rekey table this step fills and drops), in its transaction,
// RekeyEndpoints makes the installation's key and re-keys every stored
// endpoint ID. Both stores run it so.
const EndpointKeyMigration = "0011_endpoint_key.sql"

// EndpointKeySQL reads the installation's endpoint key, which a store
// reads once when it opens.
const EndpointKeySQL = `SELECT key FROM installation_keys WHERE name = 'endpoint_id'`

// MigrationTx is a migration's transaction as RekeyEndpoints uses it. The
// statements number their parameters $1, $2, …, which both stores read
// (SQLite as numbered parameters).
type MigrationTx interface {
	// Query runs query and calls scan for each row it returns; no other
	// statement runs before the rows are read.
	Query(query string, scan func(RowScanner) error, args ...any) error
	Exec(query string, args ...any) error
}

// EachRow calls scan for each of rows, then returns rows' error: what a
// MigrationTx's Query does with the rows of its store.
func EachRow(rows interface {
	Next() bool
	RowScanner
	Err() error
}, scan func(RowScanner) error) error {
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// rekeyPage is how many rows of events or attempts RekeyEndpoints reads
// at a time: what it holds in memory of them.
const rekeyPage = 1000

// RekeyEndpoints makes the installation's endpoint key (a new random
// endpoint.Key, stored in installation_keys) and replaces every
// endpoint ID stored by earlier releases (unkeyed hashes of the URL:
// LegacyEndpointID) with the keyed one, in tx, the migration's transaction
// of schema 11. It runs once per database, under the migration lock, and
// commits with the schema version: a crash leaves every ID as it was or
// every ID re-keyed, never some of each.
//
// An ID's new value is key.ID of its endpoint row's account and URL, else
// of a subscription's that names it (its URL, or its dead-letter URL),
// else (a delivery of an endpoint no subscription uses any more)
// key.OrphanID of the old ID. Every column holding endpoint IDs takes the
// new ones: endpoints.id (at a new endpoints version), the subscriptions'
// endpoint_id and dead_letter_endpoint_id (at a new catalog version, so
// that readers catching up see them), deliveries.endpoint_id, and the
// endpoint_id of Herald's operational events (source /herald, see
// internal/opevents), so that no old ID is left to guess a password from.
// Two endpoint rows of one account and URL (which earlier releases never
// wrote) become one. The same step redacts the URL passwords that attempt
// errors of earlier releases kept (redact.Text).
//
// Cost: one pass over each table, and every push delivery row is written once;
// the mapping of old to new IDs (one entry per distinct endpoint ID) is
// held in memory and in the endpoint_rekey table.
func RekeyEndpoints(tx MigrationTx) error {
	key, err := endpoint.NewKey()
	if err != nil {
		return err
	}
	if err := tx.Exec(`INSERT INTO installation_keys (name, key) VALUES ('endpoint_id', $1)`, key.Bytes()); err != nil {
		return fmt.Errorf("store the endpoint key: %w", err)
	}
	ids, dups, err := rekeyMapping(tx, key)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		if err := rekeyTables(tx, ids, dups); err != nil {
			return err
		}
		if err := rekeyEvents(tx, ids); err != nil {
			return err
		}
	}
	if err := redactAttempts(tx); err != nil {
		return err
	}
	return tx.Exec(`DROP TABLE endpoint_rekey`)
}

// rekeyMapping returns the new ID of every endpoint ID stored (see
// RekeyEndpoints), and the endpoint rows that repeat another's account and
// URL.
func rekeyMapping(tx MigrationTx, key endpoint.Key) (ids map[string]string, dups []string, err error) {
	ids = map[string]string{}
	taken := map[string]bool{}
	err = tx.Query(`SELECT id, account_id, url FROM endpoints ORDER BY id`, func(r RowScanner) error {
		var old, account, url string
		if err := r.Scan(&old, &account, &url); err != nil {
			return err
		}
		id := key.ID(account, url)
		if taken[id] {
			dups = append(dups, old)
		}
		taken[id], ids[old] = true, id
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read the endpoints: %w", err)
	}
	err = tx.Query(`SELECT id, account_id, url, endpoint_id, delivery_mode, delivery, dead_letter_endpoint_id FROM subscriptions ORDER BY id`,
		func(r RowScanner) error {
			var s subscription.Subscription
			var delivery, dl string
			if err := r.Scan(&s.ID, &s.AccountID, &s.URL, &s.EndpointID, &s.DeliveryMode, &delivery, &dl); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(delivery), &s.Delivery); err != nil {
				return fmt.Errorf("subscription %s: delivery: %w", s.ID, err)
			}
			if s.EndpointID != "" && ids[s.EndpointID] == "" {
				ids[s.EndpointID] = key.ID(s.AccountID, s.URL)
			}
			if dl != "" && ids[dl] == "" {
				ids[dl] = DeadLetterEndpointID(&s, key)
			}
			return nil
		})
	if err != nil {
		return nil, nil, fmt.Errorf("read the subscriptions: %w", err)
	}
	err = tx.Query(`SELECT DISTINCT endpoint_id FROM deliveries WHERE endpoint_id <> ''`, func(r RowScanner) error {
		var old string
		if err := r.Scan(&old); err != nil {
			return err
		}
		if ids[old] == "" {
			ids[old] = key.OrphanID(old)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read the deliveries' endpoints: %w", err)
	}
	for old, id := range ids {
		if id == "" { // a dead-letter endpoint of a subscription naming no dead-letter URL
			ids[old] = key.OrphanID(old)
		}
	}
	return ids, dups, nil
}

// rekeyTables writes the new IDs of ids into every column holding
// endpoint IDs, through the endpoint_rekey table, and deletes the endpoint
// rows dups.
func rekeyTables(tx MigrationTx, ids map[string]string, dups []string) error {
	for old, id := range ids {
		if err := tx.Exec(`INSERT INTO endpoint_rekey (old, new) VALUES ($1, $2)`, old, id); err != nil {
			return fmt.Errorf("endpoint %s: %w", old, err)
		}
	}
	for _, old := range dups {
		if err := tx.Exec(`DELETE FROM endpoints WHERE id = $1`, old); err != nil {
			return fmt.Errorf("endpoint %s: %w", old, err)
		}
	}
	const newID = `(SELECT new FROM endpoint_rekey WHERE old = `
	for _, st := range []struct{ what, counter, update string }{
		{"endpoints", "endpoints", `UPDATE endpoints SET id = ` + newID + `endpoints.id), version = $1`},
		{"subscriptions", "catalog", `UPDATE subscriptions SET
	endpoint_id = COALESCE(` + newID + `subscriptions.endpoint_id), ''),
	dead_letter_endpoint_id = COALESCE(` + newID + `subscriptions.dead_letter_endpoint_id), ''),
	version = $1
WHERE endpoint_id <> '' OR dead_letter_endpoint_id <> ''`},
		{"deliveries", "", `UPDATE deliveries SET endpoint_id = ` + newID + `deliveries.endpoint_id) WHERE endpoint_id <> ''`},
	} {
		var args []any
		if st.counter != "" {
			var v int64
			err := tx.Query(`UPDATE counters SET value = value + 1 WHERE name = $1 RETURNING value`,
				func(r RowScanner) error { return r.Scan(&v) }, st.counter)
			if err != nil {
				return fmt.Errorf("advance the %s version: %w", st.counter, err)
			}
			args = append(args, v)
		}
		if err := tx.Exec(st.update, args...); err != nil {
			return fmt.Errorf("re-key the %s: %w", st.what, err)
		}
	}
	return nil
}

// rekeyEvents replaces the old endpoint IDs of ids in the payloads of
// Herald's operational events (source /herald: internal/opevents), a page
// of rekeyPage events at a time.
func rekeyEvents(tx MigrationTx, ids map[string]string) error {
	pairs := make([]string, 0, 2*len(ids))
	for old, id := range ids {
		pairs = append(pairs, old, id)
	}
	rep := strings.NewReplacer(pairs...)
	type change struct {
		seq     int64
		payload []byte
	}
	for after := int64(0); ; {
		var changes []change
		n := 0
		err := tx.Query(`SELECT seq, payload FROM events WHERE source = '/herald' AND seq > $1 ORDER BY seq LIMIT $2`,
			func(r RowScanner) error {
				var c change
				if err := r.Scan(&c.seq, &c.payload); err != nil {
					return err
				}
				n, after = n+1, c.seq
				if p := rep.Replace(string(c.payload)); p != string(c.payload) {
					changes = append(changes, change{c.seq, []byte(p)})
				}
				return nil
			}, after, rekeyPage)
		if err != nil {
			return fmt.Errorf("read the operational events: %w", err)
		}
		for _, c := range changes {
			if err := tx.Exec(`UPDATE events SET payload = $1 WHERE seq = $2`, c.payload, c.seq); err != nil {
				return fmt.Errorf("re-key operational event %d: %w", c.seq, err)
			}
		}
		if n < rekeyPage {
			return nil
		}
	}
}

// redactAttempts redacts the URL passwords in the errors of the attempt
// log (redact.Text), a page of rekeyPage attempts whose error may
// hold one at a time.
func redactAttempts(tx MigrationTx) error {
	type attempt struct {
		delivery string
		number   int64
		err      string
	}
	after := attempt{}
	for {
		var page []attempt
		err := tx.Query(`SELECT delivery_id, number, error FROM attempts
WHERE (delivery_id, number) > ($1, $2) AND error LIKE '%://%@%'
ORDER BY delivery_id, number LIMIT $3`, func(r RowScanner) error {
			var a attempt
			if err := r.Scan(&a.delivery, &a.number, &a.err); err != nil {
				return err
			}
			page = append(page, a)
			return nil
		}, after.delivery, after.number, rekeyPage)
		if err != nil {
			return fmt.Errorf("read the attempt log: %w", err)
		}
		for _, a := range page {
			if red := redact.Text(a.err); red != a.err {
				if err := tx.Exec(`UPDATE attempts SET error = $1 WHERE delivery_id = $2 AND number = $3`, red, a.delivery, a.number); err != nil {
					return fmt.Errorf("redact the attempt log of %s: %w", a.delivery, err)
				}
			}
		}
		if len(page) < rekeyPage {
			return nil
		}
		after = page[len(page)-1]
	}
}
