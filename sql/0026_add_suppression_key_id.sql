-- +goose Up
-- Secret rotation that keeps the suppression list (issue 38).
--  - key_id: which secret keyed the entry's digest, as the first 8 bytes of
--    an HMAC of a fixed label under the list's derived key
--    (notice.AddressHasher.KeyID): it names the secret without revealing
--    it. NULL for entries written before this migration, and for those a
--    settled hard bounce or complaint copies from a ledger row's digest
--    (Settle does not hold the secret). `scan suppress list` compares it
--    with NOTICE_KEY_SECRET's and NOTICE_KEY_SECRET_PREVIOUS's to show the
--    entries still keyed only under a previous secret. A nullable column
--    without default: a catalog change, no row is rewritten.
ALTER TABLE notice_suppression ADD COLUMN key_id bytea;

-- +goose Down
ALTER TABLE notice_suppression DROP COLUMN key_id;
