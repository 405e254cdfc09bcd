-- +goose Up
-- Proof of notice (issue 37): messages are compressed as zstd frames
-- (RFC 8878) against dictionary 2, no longer as DEFLATE streams against
-- dictionary 1. DEFLATE hashes its whole preset dictionary again for every
-- message (about 20 us of the pass's CPU a notice with the 9 KB
-- dictionary); zstd prepares a raw dictionary once per encoder and keeps
-- each message about as small (docs/proof.md, "Storage").
--
-- format says how the streams of a dictionary are written: 'deflate' (raw
-- DEFLATE, RFC 1951, with the dictionary as preset history: every row
-- written under dictionary 1 stays readable as it was) or 'zstd' (a zstd
-- frame whose dictionary id is the row's id, the dictionary given raw, as
-- history, not as a trained zstd dictionary). Dictionary 2 is the same
-- bytes as dictionary 1 (sample renders, no customer's data), copied here
-- so that each row is whole by itself. Immutable, as dictionary 1.
ALTER TABLE notice_message_dict
    ADD COLUMN format text NOT NULL DEFAULT 'deflate' CHECK (format IN ('deflate', 'zstd'));
INSERT INTO notice_message_dict (id, format, body)
SELECT 2, 'zstd', body FROM notice_message_dict WHERE id = 1;

-- +goose Down
DELETE FROM notice_message_dict WHERE id = 2;
ALTER TABLE notice_message_dict DROP COLUMN format;
