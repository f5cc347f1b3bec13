-- Herald schema, version 13: reserved for the state_reason migration of
-- the issue-23 branch, which the stats branch (0014) follows. This
-- placeholder changes nothing; drop it when that migration lands.
SELECT 1;
