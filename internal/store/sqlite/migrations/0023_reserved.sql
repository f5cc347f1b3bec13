-- Herald schema, version 23: reserved for the broker destinations' schema
-- (issue 40), which another branch writes; on this branch it changes
-- nothing, so that the sources' schema (0024) follows without a gap
-- (internal/store/migrate). The merge replaces this file.
SELECT 1;
