-- Herald schema for PostgreSQL, version 3: an endpoint row lives as long as
-- a subscription uses its URL.
--
-- A subscription write deletes the row of an endpoint (a delivery URL with its
-- circuit health) when the last subscription using it is deleted or moves to
-- another URL, and moves a moved subscription's deliveries still to be
-- attempted to its new URL's endpoint, in the same transaction. This index
-- finds the subscriptions of an endpoint.
CREATE INDEX subscriptions_endpoint ON subscriptions (endpoint_id);

-- Earlier versions kept every endpoint row for ever (URLs with credentials
-- in them included) and left a moved subscription's deliveries on its old
-- URL's endpoint. Those deliveries move, then the rows no subscription uses
-- go.
UPDATE deliveries SET endpoint_id = s.endpoint_id
FROM subscriptions AS s
WHERE s.id = deliveries.subscription_id AND deliveries.status IN ('pending', 'queued')
  AND deliveries.endpoint_id <> s.endpoint_id;
DELETE FROM endpoints
WHERE NOT EXISTS (SELECT 1 FROM subscriptions AS s WHERE s.endpoint_id = endpoints.id);
