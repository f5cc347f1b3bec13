-- Herald schema, version 7: how a push subscription's requests are made.
--
-- delivery holds store.DeliveryOptions as JSON: the body's schema
-- (cloudevents, cloudevents-binary, eventgrid, data, pubsub), the batch
-- settings, the endpoint validation handshake and its token and last error,
-- and the dead-letter destination. '{}' is the default of each: one
-- CloudEvent a request in structured mode, as before this version. They are
-- read with the subscription and never queried.
ALTER TABLE subscriptions ADD COLUMN delivery TEXT NOT NULL DEFAULT '{}';
