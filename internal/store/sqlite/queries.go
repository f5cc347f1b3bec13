package sqlite

// getDeliverySQL reads a delivery by ID (the engine's GetDelivery, whose
// statement is queries/reads.sql's): the legacy writes that still read one
// inside their transactions (Redeliver, ClaimDue's dead letters) use it.
const getDeliverySQL = `SELECT ` + deliveryCols + `
FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq WHERE d.id = ?`
