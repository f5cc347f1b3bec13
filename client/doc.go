// Package client is a Go client for the Herald API's /v1 operations
// (internal/api/openapi.yaml, docs/api.md): accounts, keys,
// subscriptions and their actions and queues, jobs, portal sessions,
// events, deliveries and attempts, dead letters, endpoints, stats and
// endpoint validation. Event Grid's routes (/api/events, /topics/…) are
// for Azure's own SDKs (docs/eventgrid.md), and /healthz, /readyz and
// /metrics for probes and scrapers; the client has none of them.
//
// Make a Client with New and use its service fields; every method takes a
// context first and sends one request:
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithKey(key))
//	sub, err := c.Subscriptions.Create(ctx, client.SubscriptionInput{
//		Name: "billing", URL: "https://example.com/hook", EventTypes: []string{"invoice.paid"},
//	})
//	_, err = c.Events.Publish(ctx, client.Event{ID: "1", Source: "/billing", Type: "invoice.paid",
//		Data: json.RawMessage(`{"total": 12}`)})
//	page, err := c.Deliveries.List(ctx, client.DeliveryListParams{SubscriptionID: sub.ID})
//
// Limits and behaviour:
//   - Each request is bounded by WithTimeout (DefaultTimeout, 30s) and by
//     its context; a receive adds its max_wait.
//   - A successful answer is read up to MaxResponseBytes (64 MiB), an
//     error answer up to 64 KiB.
//   - An answer other than 2xx is a *Problem (the RFC 9457 document, or
//     the status alone when the body is not one), with the Field the
//     API names and a 503's Retry-After; find it with errors.As.
//   - The client never retries: a caller that wants to retries itself
//     (publishing again is safe, as events are deduplicated).
//   - Lists answer one Page; All follows next_cursor until the last page.
//   - Resources decode with the API's JSON names, ignoring members this
//     version does not know, so a newer server's answers still decode.
package client
