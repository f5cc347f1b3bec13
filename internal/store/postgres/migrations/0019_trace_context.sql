-- Herald schema for PostgreSQL, version 19: an event's trace context
-- (docs/tracing.md).
--
-- trace_context is the W3C traceparent of the event's publish span (and
-- ";" and its tracestate when it has one), written when tracing is on and
-- NULL otherwise: the claims read it with the payload, so that the
-- attempts of the event's deliveries, on any node and after a restart,
-- are children of the publish span. A nullable column without a default
-- is added without rewriting the table.
ALTER TABLE events ADD COLUMN trace_context text;
