-- +goose Up
-- The delivery objective (issue 36 §6): at the end of every pass,
-- ledger.Objective counts the notices whose window closed within the last
-- 30 days (and 1h, 6h, 1d, 3d) and how many of them reached the customer.
-- It finds them by a range of window_closes_at, which no index served
-- (notice_ledger_retry covers the retry rows alone), so without this one
-- the query read every month of the ledger on every pass. One more btree
-- entry per claim; built once per month's partition here (a partitioned
-- table's index cannot be built CONCURRENTLY: docs/delivery.md, "The
-- objective", says how long on a big ledger and how to build it ahead).
CREATE INDEX IF NOT EXISTS notice_ledger_window_closes
    ON notice_ledger (window_closes_at);

-- +goose Down
DROP INDEX IF EXISTS notice_ledger_window_closes;
