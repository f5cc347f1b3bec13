-- Herald schema, version 20: recover jobs take turns by account, are bounded
-- per account and are deleted after --job-retention (docs/recover.md).
--
-- job_turns holds, per account, the turn its last claimed batch was given
-- (the turns count up by one a claim): the job runners claim the next batch
-- from the account whose turn is the oldest (an account without a row
-- first). A row is deleted with its account's last job. jobs_account counts
-- an account's running jobs (--max-jobs-per-account) and tells whether it
-- has a job left; jobs_finished finds the jobs the retention clean-up
-- deletes.
CREATE TABLE job_turns (
    account_id TEXT PRIMARY KEY,
    turn       INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX jobs_account ON jobs (account_id, state);
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state <> 'running';
