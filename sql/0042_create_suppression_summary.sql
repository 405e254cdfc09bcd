-- +goose Up
-- A summary of the suppression list (issue 39): fewer probes of the list.
--
-- The claim statements probe the list's hash index (sql/0022) once per
-- notice: with 1M entries its pages are mostly not in shared_buffers and
-- the probe was +4 us of PostgreSQL CPU a notice, +6.6% of a pass. This
-- table is a bit set of 2^24 bits over every channel's digests: bit i is
-- set when some entry's digest starts with the 24 bits i (HMAC digests are
-- uniform). A pass reads it once at its start (2 MB) and, in each claim's
-- transaction, only the chunks that changed since (ledger.SuppressionSummary);
-- it then probes only the claims whose digest (or previous digest, for
-- the re-keying of a secret rotation) hits a set bit: with 1M entries
-- about 6% of them (1 - e^(-1M/2^24)), and none with an empty list.
--
-- A clear bit proves the digest is not on the list (as of the summary's
-- read); a set bit only says "probe". Bits are set, never cleared, by the
-- writers: a deleted entry leaves its bit set (it costs a probe, never a
-- miss) until notice_suppression_summary_rebuild() recomputes the set.
--
--  - chunk: the digest's first 14 bits; bits: the next 10 bits' positions
--    (bit 0 is the leftmost). Up to 16,384 rows of 1,024 bits, each made
--    at its chunk's first entry: a writer of a batch of 1,000 entries
--    (scan suppress import) rewrites about 950 rows of 128 bytes, not
--    the whole 2 MB.
--  - changed: the top-level transaction id of the chunk's last writer. A
--    reader that kept the xmin of its last read's snapshot
--    (pg_snapshot_xmin) reads again only the rows with changed at or
--    above it: every transaction its last snapshot did not see has an id
--    at least that xmin, so a chunk written after (or during) the last
--    read is never skipped, whatever order the writers commit in (a
--    sequence's values would not say that: a writer could take a lower
--    value and commit after a read that saw a higher one).
CREATE TABLE notice_suppression_summary (
    chunk   integer   NOT NULL,
    bits    bit(1024) NOT NULL,
    changed xid8      NOT NULL,
    CONSTRAINT notice_suppression_summary_pkey PRIMARY KEY (chunk),
    CONSTRAINT notice_suppression_summary_chunk_check CHECK (chunk >= 0 AND chunk < 16384)
);
CREATE INDEX notice_suppression_summary_changed ON notice_suppression_summary (changed);

-- notice_suppression_summary_add sets the bits of the digests of the rows
-- a statement inserted or updated (its transition table, added): per
-- chunk, one bit_or over B'1' shifted to each digest's position, ORed
-- onto the chunk's row (created at its first bit). The rows are written
-- in chunk order, so two writers of the list at once never wait on each
-- other in a cycle; the OR applies to the row version the upsert finds,
-- so a concurrent writer's bits are never lost. A chunk whose bits are
-- already all set is not rewritten. SECURITY DEFINER: a role that may
-- write the list (the pass's, for its re-keying; its data-modifying CTE
-- fires the trigger even when it inserts nothing) needs no privilege on
-- the summary. A pass reads the summary with SELECT on it
-- (docs/delivery.md); a role without it probes every notice, as before.
-- +goose StatementBegin
CREATE FUNCTION notice_suppression_summary_add() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
BEGIN
    INSERT INTO notice_suppression_summary AS s (chunk, bits, changed)
    SELECT d.chunk, bit_or(B'1'::bit(1024) >> d.pos), pg_current_xact_id()
    FROM (SELECT (get_byte(a.address_hmac, 0) << 6) | (get_byte(a.address_hmac, 1) >> 2) AS chunk,
                 ((get_byte(a.address_hmac, 1) & 3) << 8) | get_byte(a.address_hmac, 2) AS pos
          FROM added a) d
    GROUP BY d.chunk
    ORDER BY d.chunk
    ON CONFLICT (chunk) DO UPDATE SET bits = s.bits | EXCLUDED.bits, changed = EXCLUDED.changed
    WHERE (s.bits | EXCLUDED.bits) <> s.bits;
    RETURN NULL;
END
$fn$;
-- +goose StatementEnd

-- One statement-level trigger per event (a transition table serves one
-- event only): a bulk insert of 1M entries sets its bits in one pass over
-- its rows and one UPDATE of the chunks it touches. Updates of an entry
-- set the bits of its new digest (the old one's stays set).
CREATE TRIGGER notice_suppression_summary_insert
    AFTER INSERT ON notice_suppression
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION notice_suppression_summary_add();
CREATE TRIGGER notice_suppression_summary_update
    AFTER UPDATE ON notice_suppression
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION notice_suppression_summary_add();

-- notice_suppression_summary_rebuild recomputes every chunk from the list
-- (clearing the bits of deleted entries: a chunk left without entries is
-- cleared, never deleted, so that readers see it change) and returns how
-- many chunks it wrote. It takes SHARE on notice_suppression for its
-- duration: writers of the list wait (readers, the passes' probes, do
-- not), so that no entry added meanwhile loses its bit.
-- +goose StatementBegin
CREATE FUNCTION notice_suppression_summary_rebuild() RETURNS integer
LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$
DECLARE
    n integer;
    m integer;
BEGIN
    LOCK TABLE notice_suppression IN SHARE MODE;
    INSERT INTO notice_suppression_summary AS s (chunk, bits, changed)
    SELECT d.chunk, bit_or(B'1'::bit(1024) >> d.pos), pg_current_xact_id()
    FROM (SELECT (get_byte(l.address_hmac, 0) << 6) | (get_byte(l.address_hmac, 1) >> 2) AS chunk,
                 ((get_byte(l.address_hmac, 1) & 3) << 8) | get_byte(l.address_hmac, 2) AS pos
          FROM notice_suppression l) d
    GROUP BY d.chunk
    ORDER BY d.chunk
    ON CONFLICT (chunk) DO UPDATE SET bits = EXCLUDED.bits, changed = EXCLUDED.changed
    WHERE s.bits <> EXCLUDED.bits;
    GET DIAGNOSTICS n = ROW_COUNT;
    UPDATE notice_suppression_summary s
    SET bits = B'0'::bit(1024), changed = pg_current_xact_id()
    WHERE s.bits <> B'0'::bit(1024)
      AND NOT EXISTS (SELECT 1 FROM notice_suppression l
                      WHERE (get_byte(l.address_hmac, 0) << 6) | (get_byte(l.address_hmac, 1) >> 2) = s.chunk);
    GET DIAGNOSTICS m = ROW_COUNT;
    RETURN n + m;
END
$fn$;
-- +goose StatementEnd

-- The summary of the list as it is. Lock and duration: CREATE TRIGGER
-- takes SHARE ROW EXCLUSIVE on notice_suppression until the migration
-- commits: the list's writers (suppress add or import, Settle's bounces,
-- a pass's re-keying) wait, its readers do not. On a list of 1.1M entries
-- the whole `scan migrate` took 11.5 s and 18.5 s on the shared 2-core
-- machine at load 17-21 (mostly the rebuild's one pass over the list):
-- that long, a Settle that adds a bounce waits. On an empty list it
-- writes nothing.
SELECT notice_suppression_summary_rebuild();

-- +goose Down
DROP TRIGGER notice_suppression_summary_update ON notice_suppression;
DROP TRIGGER notice_suppression_summary_insert ON notice_suppression;
DROP FUNCTION notice_suppression_summary_rebuild();
DROP FUNCTION notice_suppression_summary_add();
DROP TABLE notice_suppression_summary;
