-- Herald schema for PostgreSQL, version 9: a subscription's content filters.
--
-- filters holds store.FilterOptions as JSON: the advanced filters (the
-- advanced_filters list as the API wrote it, kept byte for byte) and
-- whether the subject's prefix and suffix compare letter case. '{}' is no
-- advanced filter and a subject compared in any letter case, as before this
-- version. They are read with the subscription (the catalog compiles them)
-- and never queried. The DEFAULT is constant: adding the column rewrites
-- no table.
ALTER TABLE subscriptions ADD COLUMN filters text NOT NULL DEFAULT '{}';
