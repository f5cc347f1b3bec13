package sqlite

// clearJobLeaseSQL ends every job's lease: a job's lease lasts until it is
// given back, or until the store is opened again (Open runs this), since
// one process owns the file.
const clearJobLeaseSQL = `UPDATE jobs SET lease_owner = '', lease_until = 0 WHERE lease_owner <> ''`
