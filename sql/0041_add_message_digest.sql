-- +goose Up
-- Proof of notice (issue 37): every kept attempt is verifiable, not only
-- the current one.
--
-- The ledger row keeps one digest (message_sha256), of its current
-- attempt, and the re-claim clears it; sql/0036's trigger then copies the
-- earlier attempt's message into notice_message, but until now not the
-- digest recorded when that message was handed over, so nothing could
-- check it. The trigger sees that digest in the old row version (OLD), so
-- it now copies it too, into notice_message.digest, and `scan proof` and
-- `scan proof --verify` check each earlier attempt against it. Messages
-- kept before this migration have no digest (NULL): they are reported as
-- unverifiable (kept before 0041), never as verified.
--
-- The digest is copied only when the row's message is the current
-- attempt's (message_attempt = attempts): the ledger's digest is always
-- the current attempt's, and a message of an older attempt under it would
-- be an attempt checked against another's digest.
--
-- Lock and duration: a nullable column with no default, and a function
-- replaced in place, change the catalog only (nothing is rewritten or
-- scanned): ACCESS EXCLUSIVE on notice_message for milliseconds whatever
-- its row count; the ledger is not locked at all (its trigger keeps its
-- definition and calls the replaced function from the next statement on).
ALTER TABLE notice_message ADD COLUMN digest bytea;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION notice_ledger_keep_earlier_message() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$
BEGIN
    INSERT INTO notice_message (period_start, key, attempt, dict, body, digest)
    VALUES (OLD.period_start, decode(OLD.notice_key, 'hex'), OLD.message_attempt, OLD.message_dict, OLD.message,
            CASE WHEN OLD.message_attempt = OLD.attempts THEN OLD.message_sha256 END)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION notice_ledger_keep_earlier_message() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$
BEGIN
    INSERT INTO notice_message (period_start, key, attempt, dict, body)
    VALUES (OLD.period_start, decode(OLD.notice_key, 'hex'), OLD.message_attempt, OLD.message_dict, OLD.message)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$fn$;
-- +goose StatementEnd
ALTER TABLE notice_message DROP COLUMN digest;
