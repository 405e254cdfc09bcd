-- +goose Up
-- Proof of notice (issue 37): messages are compressed as S2 blocks
-- (github.com/klauspost/compress/s2, Dict.Encode) against dictionary 3, no
-- longer as zstd frames against dictionary 2. zstd restores its 256 KB
-- match table from the prepared dictionary before every message and then
-- builds Huffman and FSE tables for it: about 10-13 us of the pass's CPU a
-- notice, most of what keeping messages cost the pass. S2 matches against
-- a table it prepares once and emits no entropy coding: about 2 us a
-- message, for about 48 B more a message (median 330 B against 282 B on
-- the bench's messages; docs/proof.md, "Storage").
--
-- Format 's2': an S2 block (its uncompressed length as a uvarint, then
-- literals and copies) whose copies may reach back into the dictionary,
-- given raw, with the first repeat offset at its start (s2's
-- MakeDictManual(body, 0)). Dictionary 3 is the same bytes as dictionaries
-- 1 and 2 (sample renders, no customer's data), copied so that each row is
-- whole by itself. Immutable, as they are; rows written under 1 and 2 stay
-- readable as they were.
ALTER TABLE notice_message_dict
    DROP CONSTRAINT notice_message_dict_format_check,
    ADD CONSTRAINT notice_message_dict_format_check CHECK (format IN ('deflate', 'zstd', 's2'));
INSERT INTO notice_message_dict (id, format, body)
SELECT 3, 's2', body FROM notice_message_dict WHERE id = 1;

-- +goose Down
DELETE FROM notice_message_dict WHERE id = 3;
ALTER TABLE notice_message_dict
    DROP CONSTRAINT notice_message_dict_format_check,
    ADD CONSTRAINT notice_message_dict_format_check CHECK (format IN ('deflate', 'zstd'));
