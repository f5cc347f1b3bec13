package postgres

// The queue's reads and locks are the engine's (internal/store/engine,
// queue.go; queries/queue.sql).

// queuedRows is the condition of the partial indexes of queued deliveries
// (0006_queue.sql): statements repeat it literally, so that every plan,
// generic ones included, can use them.
const queuedRows = `d.status = 'queued'`
