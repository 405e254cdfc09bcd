-- +goose Up
-- One index fewer for every outcome to write (issue 12). A provider id is
-- stored only with a sent outcome: a claim in quarantine never got a reply
-- and has none, so the index served no settlement, only the count of
-- events about notices already settled. Reconcile now looks a provider id
-- up among the claims still in quarantine (through the quarantine index);
-- an event that names a settled notice by the provider's id alone is
-- counted as unknown. Measured in docs/BENCHMARKS.md.
DROP INDEX IF EXISTS notice_ledger_provider_id;

-- +goose Down
CREATE INDEX IF NOT EXISTS notice_ledger_provider_id
    ON notice_ledger (provider_id) WHERE provider_id IS NOT NULL;
