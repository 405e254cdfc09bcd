package ledger

// Every SQL statement on the ledger, by name, noun first. Statements take
// their instants as parameters; none calls now(). The batch statements
// (noticeClaim, noticeReclaim, noticeRecordOutcome) receive their arrays
// in PostgreSQL's binary format (pgArray), typed, with nothing to parse
// or cast per element; the others' arrays travel as text[] through lib/pq
// and are cast on the server (tsLayout, dateLayout).
// The one statement only tests ask is in package ledgertest.

// noticeClaim inserts one batch of claims and returns the rows this
// statement inserted: a key already in the ledger (or a business tuple
// already there under another key, after a secret rotation) is skipped by
// ON CONFLICT DO NOTHING and is simply absent from the result. A claim of
// a later revision reuses the cancellation token of the revision it
// supersedes (of the same channel) and points at it. Each row keeps the
// rule and zone its deadline used, its first claim time, its channel and
// its recipient's suppression digest.
//
// The second witness: a claim (state claimed) whose key has provider
// evidence kept in notice_evidence_unmatched that the provider had the
// message (accepted, delivered, deferred, bounced, complained, opened) is
// inserted settled instead, sent (failed for a hard bounce) with
// settled_by 'witness', the evidence's time and provider id, and is
// returned with witnessed: the pass does not send it. That evidence moves
// to notice_evidence under the notice, in the same statement. The look-up
// is one index scan of the unmatched events for the whole batch, by the
// keys' first 32 characters ($19, = ANY: the index's array search, then
// a hash join), never a scan of the table.
//
// $1 keys, $2 subscription ids, $3 kinds (text[] each), $4 period starts
// (date[]), $5 revisions (int4[]), $6 renews_at and $7 window_closes_at
// (timestamptz[] each), $8 domains, $9 message ids, $10 cancel tokens
// (text[] each), $11 state,
// $12 claimed_at, $13 run id, $14 redirect address or empty, $15 rules
// and $16 time zones (text[] each, empty for NULL; issue 27), $17 the
// batch's channel (empty is email), $18 address digests (bytea[], NULL
// for none; issue 30), $19 the keys' first 32 characters (text[]), $20
// whether to probe the batch's channel's suppression list (boolean), $21
// the reason a listed recipient's row records (ReasonSuppressed).
//
// The suppression probe (issue 30), in this statement rather than one of
// its own: with $20 true, a claim (state claimed) whose digest is on the
// channel's list is inserted failed with reason $21, no attempt, no
// message id, token or redirect, as RecordUnreached records it, and is
// returned with suppressed: the pass does not send it, and the kind's
// next channel takes it. One probe of the list's hash index (sql/0022) per
// claim, in the inner select, which OFFSET 0 keeps from being flattened
// into the outer one so that each row's probe runs once and not once per
// column that reads it. The channel is compared outside the sub-select,
// as in noticeSuppressionMatch, so that the planner takes the hash index.
// With $20 false (an empty list at the pass's start) the probe is folded
// away at plan time.
//
// Across a secret rotation (issue 38; see noticeSuppressionRekey): $22
// (text[], parallel to $18) holds each claim's digests under the previous
// secrets, hex joined by commas; with $23 true, an entry found under one
// of them is re-recorded under the claim's current digest, with key id
// $24 (hex), by rekey, rekeyed and unkeyed, and the claim is listed. With
// $23 false (no previous secret) they are folded away at plan time.
//
// Fewer probes (issue 39): $25 (boolean[], parallel to $18, or NULL)
// says which claims to probe at all. The pass sets it from the list's
// summary (SuppressionSummary, sql/0042), which it refreshes in this
// statement's transaction just before it: false where neither the
// claim's digest nor any of its previous digests hits a set bit, that is
// where no entry committed before the refresh's snapshot has that digest.
// A NULL array (or element) probes. The guarantee is then: an entry
// committed before the claim's transaction's refresh is honoured; one
// committed between the refresh and this statement's snapshot (a window
// of one round trip) counts from the next batch. Without the summary
// (probe every claim), as before: an entry committed before this
// statement's snapshot (READ COMMITTED).
const noticeClaim = noticeClaimRows + `
ON CONFLICT DO NOTHING` + noticeClaimReturning

// noticeClaimUnseen is noticeClaim without ON CONFLICT: a row whose key,
// or whose business tuple, the ledger already holds is left out by a
// probe of each of the two unique indexes ON CONFLICT would check (one
// LATERAL look-up per row, LIMIT 1, so never a join over the ledger's
// months), and the others are inserted plainly. ON CONFLICT's
// speculative insertion WAL-logs a confirmation of every row it inserts
// (48 B a notice, 3% of the minimal claim plus sent-mark; issue 39); a
// plain insert does not. A row another session inserts after the probe
// (a concurrent pass over the same notices), or the same notice twice in
// one batch, is still refused by the unique index: the statement fails
// with unique_violation (or a deadlock with that session), its
// transaction rolls back whole, and
// insertBatch runs noticeClaim instead. A claim is never lost nor
// doubled, only retried.
const noticeClaimUnseen = noticeClaimRows + `
LEFT JOIN LATERAL (
    SELECT 1 AS found FROM notice_ledger x
    WHERE x.notice_key = c.notice_key AND x.period_start = c.period_start
    LIMIT 1) bykey ON true
LEFT JOIN LATERAL (
    SELECT 1 AS found FROM notice_ledger x
    WHERE x.subscription_id = c.subscription_id AND x.kind = c.kind
      AND x.period_start = c.period_start AND x.revision = c.revision
      AND x.channel = COALESCE(NULLIF($17, ''), 'email')
    LIMIT 1) bytuple ON true
WHERE bykey.found IS NULL AND bytuple.found IS NULL` + noticeClaimReturning

// noticeClaimRows is the first part of noticeClaim and noticeClaimUnseen:
// the rows a batch inserts.
const noticeClaimRows = `
WITH rekey AS MATERIALIZED (
    SELECT DISTINCT ON (s.channel, s.address_hmac)
           s.channel, s.address_hmac AS old, r.h AS new,
           s.reason, s.source, s.notice_key, s.created_at
    FROM unnest($18::bytea[], $22::text[], $25::boolean[]) AS r(h, prev, probe)
    CROSS JOIN LATERAL unnest(string_to_array(NULLIF(r.prev, ''), ',')) AS p(h)
    JOIN notice_suppression s ON s.address_hmac = decode(p.h, 'hex')
    WHERE $23::boolean AND r.probe IS NOT FALSE AND r.h IS NOT NULL AND decode(p.h, 'hex') <> r.h
      AND s.channel = COALESCE(NULLIF($17, ''), 'email')),
rekeyed AS (
    INSERT INTO notice_suppression (channel, address_hmac, reason, source, notice_key, created_at, key_id)
    SELECT channel, new, reason, source, notice_key, created_at, decode(NULLIF($24, ''), 'hex') FROM rekey
    ON CONFLICT DO NOTHING),
unkeyed AS (
    DELETE FROM notice_suppression s USING rekey k
    WHERE s.channel = k.channel AND s.address_hmac = k.old),
ins AS (
INSERT INTO notice_ledger AS l (
    notice_key, subscription_id, kind, period_start, revision, state,
    claimed_at, run_id, renews_at, window_closes_at, domain, message_id,
    cancel_token, supersedes, redirected_to, attempts,
    rule, time_zone, first_claimed_at, channel, address_hmac,
    sent_at, provider_id, settled_by, updated_at, last_error)
SELECT c.notice_key, c.subscription_id, c.kind, c.period_start, c.revision,
       CASE WHEN c.listed THEN 'failed' WHEN w.n IS NULL THEN $11 WHEN w.hard THEN 'failed' ELSE 'sent' END,
       $12, $13, c.renews_at, c.window_closes_at,
       NULLIF(c.domain, ''), CASE WHEN NOT c.listed THEN NULLIF(c.message_id, '') END,
       CASE WHEN NOT c.listed THEN COALESCE(prev.cancel_token, NULLIF(c.cancel_token, '')) END, prev.notice_key,
       CASE WHEN NOT c.listed THEN NULLIF($14, '') END, CASE WHEN $11 = 'claimed' AND NOT c.listed THEN 1 ELSE 0 END,
       NULLIF(c.rule, ''), NULLIF(c.time_zone, ''),
       CASE WHEN $11 = 'claimed' AND NOT c.listed THEN $12::timestamptz END,
       COALESCE(NULLIF($17, ''), 'email'), c.address_hmac,
       CASE WHEN w.n > 0 THEN COALESCE(w.at, $12) END, w.provider_id,
       CASE WHEN w.n > 0 THEN 'witness' END, CASE WHEN w.n > 0 OR c.listed THEN $12::timestamptz END,
       CASE WHEN c.listed THEN $21::text END
FROM (SELECT a.*, $20::boolean AND $11 = 'claimed' AND a.probe IS NOT FALSE AND (COALESCE(NULLIF($17, ''), 'email') IN (
             SELECT s.channel FROM notice_suppression s
             WHERE s.address_hmac = a.address_hmac)
             OR ($23::boolean AND a.address_hmac IN (SELECT k.new FROM rekey k))) AS listed
      FROM unnest($1::text[], $2::text[], $3::text[], $4::date[], $5::int4[],
                  $6::timestamptz[], $7::timestamptz[], $8::text[], $9::text[], $10::text[],
                  $15::text[], $16::text[], $18::bytea[], $25::boolean[])
           AS a(notice_key, subscription_id, kind, period_start, revision,
                renews_at, window_closes_at, domain, message_id, cancel_token,
                rule, time_zone, address_hmac, probe)
      OFFSET 0) c
LEFT JOIN LATERAL (
    SELECT p.notice_key, p.cancel_token
    FROM notice_ledger p
    WHERE c.revision > 0 AND NOT c.listed
      AND p.subscription_id = c.subscription_id
      AND p.kind = c.kind
      AND p.period_start = c.period_start
      AND p.revision < c.revision
      AND p.channel = COALESCE(NULLIF($17, ''), 'email')
    ORDER BY p.revision DESC
    LIMIT 1) prev ON true
LEFT JOIN (
    SELECT u.key32, count(*) AS n, bool_or(u.kind = 'bounce_hard') AS hard,
           min(u.occurred_at) AS at, max(u.provider_id) AS provider_id
    FROM notice_evidence_unmatched u
    WHERE $11 = 'claimed'
      AND u.key32 = ANY($19::text[])
      AND u.kind IN ('accepted', 'delivered', 'deferred', 'bounce_soft', 'bounce_hard',
                     'complaint', 'engagement')
    GROUP BY u.key32) w ON w.key32 = left(c.notice_key, 32) AND NOT c.listed`

// noticeClaimReturning is the last part of noticeClaim and
// noticeClaimUnseen: what the inserted rows return, and the second
// witness's evidence moved under them.
const noticeClaimReturning = `
RETURNING notice_key, COALESCE(cancel_token, '') AS cancel_token, attempts,
          settled_by IS NOT DISTINCT FROM 'witness' AS witnessed,
          last_error IS NOT DISTINCT FROM $21::text AS suppressed, period_start),
moved AS (
    DELETE FROM notice_evidence_unmatched u
    USING ins
    WHERE ins.witnessed AND u.key32 = left(ins.notice_key, 32)
    RETURNING ins.notice_key, ins.period_start, u.attempt, u.kind, u.event, u.occurred_at,
              u.detail, u.recorded_at),
kept AS (
    INSERT INTO notice_evidence
        (notice_key, period_start, attempt, kind, event, occurred_at, detail, recorded_at)
    SELECT notice_key, period_start, GREATEST(attempt, 1), kind, event, occurred_at, detail, recorded_at
    FROM moved
    ON CONFLICT DO NOTHING)
SELECT notice_key, cancel_token, attempts, witnessed, suppressed FROM ins
WHERE ` + noticeClaimDurable + ` IS NOT NULL`

// noticeClaimDurable makes the transaction it runs in (a claim's, and
// Settle's: the evidence a provider's webhook was answered for) commit
// synchronously: synchronous_commit at least on (remote_apply, stronger,
// is kept), for this transaction only, whatever the server's, database's
// or role's default. A claim's COMMIT then waits for its WAL flush (and
// for synchronous standbys, where there are any) before it returns.
//
// It is a scalar sub-select, not a statement: noticeClaim and
// noticeReclaim end with WHERE noticeClaimDurable IS NOT NULL on their
// last SELECT, an uncorrelated sub-select the planner makes an init plan
// of a one-time filter, which the executor evaluates once whatever rows
// the statement inserts or updates (none included). COMMIT reads the
// setting, so setting it inside the claim statement is as durable as a
// statement of its own before it, one round trip less per batch (issue
// 39).
const noticeClaimDurable = `(
SELECT set_config('synchronous_commit',
    CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END,
    true))`

// noticeReclaim re-claims rows in state retry by compare-and-set: only the
// pass whose UPDATE sees state = 'retry' gets the row back. The window
// must still be open at $2. Each re-claim is a new attempt: attempts
// counts it, claimed_at is set anew (events without an attempt number are
// told apart by it; the first attempt's stays in first_claimed_at), and
// the previous attempt's digest and settlement are cleared (its evidence
// stays in notice_evidence under its number).
//
// The suppression probe, as in noticeClaim: with $6 true, a row whose
// recipient's digest now ($5, bytea, parallel to $1: the address the pass
// would send to, which may not be the one the row was first claimed for)
// is on channel $7's list is failed with reason $8 instead of re-claimed,
// and returned with suppressed. The listed keys are found once (listed),
// and the two updates take disjoint rows: a statement must not update a
// row twice. With $6 false, listed is folded away at plan time.
//
// Across a secret rotation, as in noticeClaim: with $10 true, an entry
// found under one of a row's previous digests ($9, parallel to $5, hex
// joined by commas) is re-recorded under $5's with key id $11 (hex), and
// the row is listed.
//
// Fewer probes, as in noticeClaim: $12 (boolean[], parallel to $1, or
// NULL to probe every row) is false for a row whose digests miss the
// list's summary, refreshed in this statement's transaction.
//
// $1 keys, $2 claimed_at (the pass's now), $3 run id, $4 redirect or the
// empty string, $5 digests (bytea[], NULL for none), $6 probe (boolean), $7 channel
// (empty is email), $8 reason, $9 previous digests (text[]), $10 re-key
// (boolean), $11 key id (hex), $12 which rows to probe (boolean[]).
const noticeReclaim = `
WITH rekey AS MATERIALIZED (
    SELECT DISTINCT ON (s.channel, s.address_hmac)
           s.channel, s.address_hmac AS old, r.h AS new,
           s.reason, s.source, s.notice_key, s.created_at
    FROM unnest($5::bytea[], $9::text[], $12::boolean[]) AS r(h, prev, probe)
    CROSS JOIN LATERAL unnest(string_to_array(NULLIF(r.prev, ''), ',')) AS p(h)
    JOIN notice_suppression s ON s.address_hmac = decode(p.h, 'hex')
    WHERE $10::boolean AND r.probe IS NOT FALSE AND r.h IS NOT NULL AND decode(p.h, 'hex') <> r.h
      AND s.channel = COALESCE(NULLIF($7, ''), 'email')),
rekeyed AS (
    INSERT INTO notice_suppression (channel, address_hmac, reason, source, notice_key, created_at, key_id)
    SELECT channel, new, reason, source, notice_key, created_at, decode(NULLIF($11, ''), 'hex') FROM rekey
    ON CONFLICT DO NOTHING),
unkeyed AS (
    DELETE FROM notice_suppression s USING rekey k
    WHERE s.channel = k.channel AND s.address_hmac = k.old),
listed AS MATERIALIZED (
    SELECT r.notice_key
    FROM unnest($1::text[], $5::bytea[], $12::boolean[]) AS r(notice_key, h, probe)
    WHERE $6::boolean AND r.probe IS NOT FALSE AND (COALESCE(NULLIF($7, ''), 'email') IN (
        SELECT s.channel FROM notice_suppression s
        WHERE s.address_hmac = r.h)
        OR ($10::boolean AND r.h IN (SELECT k.new FROM rekey k)))),
failed AS (
    UPDATE notice_ledger
    SET state = 'failed', last_error = $8::text, updated_at = $2
    WHERE notice_key IN (SELECT notice_key FROM listed)
      AND state = 'retry'
    RETURNING notice_key, COALESCE(cancel_token, '') AS cancel_token, attempts, true AS suppressed),
reclaimed AS (
    UPDATE notice_ledger
    SET state = 'claimed', claimed_at = $2, run_id = $3,
        first_claimed_at = COALESCE(first_claimed_at, claimed_at),
        redirected_to = NULLIF($4, ''), updated_at = $2,
        attempts = attempts + 1, message_sha256 = NULL, settled_by = NULL,
        sender = NULL
    WHERE notice_key = ANY($1::text[])
      AND notice_key NOT IN (SELECT notice_key FROM listed)
      AND state = 'retry'
      AND (window_closes_at IS NULL OR window_closes_at > $2)
    RETURNING notice_key, COALESCE(cancel_token, '') AS cancel_token, attempts, false AS suppressed)
SELECT * FROM failed WHERE ` + noticeClaimDurable + ` IS NOT NULL
UNION ALL
SELECT * FROM reclaimed`

// noticeRecordOutcome records a batch of outcomes of one run's claims. The
// row must still be claimed by that run: an operator's decision made in the
// meantime is never overwritten. An unknown outcome keeps state 'claimed'
// (quarantine) and records only the error and the digest. attempts is the
// claim's (noticeClaim, noticeReclaim), not written here. The digest (32
// bytes, or NULL when nothing was handed over) is stored as is.
//
// The rows are found by index scans only, within the months the period
// bounds leave (whole months, so that they prune at plan time), and paired
// with their outcomes by a hash join; noticeOutcomePlan rules out every
// other plan. Left to itself, PostgreSQL (which estimates that almost no
// row is claimed: true of a month, not of a batch) scanned the quarantine
// index with a bitmap, and a bitmap scan never marks dead the entries of
// the claims a pass has already settled, which stay until VACUUM: each
// batch read every claim of the pass so far, and on a month with no
// statistics yet looped over them once per outcome. A plain index scan
// (of the quarantine index, or of the primary key by notice_key = ANY)
// marks them as it passes.
//
// In the same statement, the message each outcome handed over (compressed,
// $11, empty when none) is kept in the row itself (message, message_dict,
// message_attempt: sql/0036; proof of notice, issue 37): no other tuple,
// no index entry, no extra round trip, and a message is kept only for an
// outcome the ledger took. The statement never reads those columns (the
// pass's role needs no read right on them). When the row held an earlier
// attempt's message, the trigger of sql/0036 copied it into notice_message
// when the retry was claimed (noticeReclaim), so this statement replaces
// it freely; the same attempt's (a batch retried after a commit whose
// reply was lost) is rewritten with the same bytes.
//
// The arrays are binary parameters (pgArray: outcomeArrays), received as
// they are: no array literal to parse, no element cast from text.
//
// $1 keys, $2 states (text[]), $3 sent_at (timestamptz[], NULL for none),
// $4 provider ids (text[]), $5 digests (bytea[], NULL for none), $6 errors
// (text[]), $7 the first day of the earliest
// month and $8 the first day after the latest (YYYY-MM-DD), or NULL for
// every month, $9 run id, $10 updated_at, $11 the compressed messages
// end to end (one bytea, which lib/pq's binary_parameters sends as is: a
// bytea[] travels as hex text that PostgreSQL parses back element by
// element), $14 where each starts in it (1-based) and $15 its length (0:
// none) (int4[] each),
// $12 the dictionary they were compressed against (notice_message_dict),
// $13 senders (the name of the sender each attempt went through, empty
// for none: a NULL sender).
const noticeRecordOutcome = `
UPDATE notice_ledger l
SET state = o.state,
    sent_at = o.sent_at,
    provider_id = NULLIF(o.provider_id, ''),
    message_sha256 = o.digest,
    last_error = NULLIF(o.last_error, ''),
    sender = NULLIF(o.sender, ''),
    message_attempt = CASE WHEN o.body_len > 0 THEN l.attempts END,
    message_dict = CASE WHEN o.body_len > 0 THEN $12::smallint END,
    message = CASE WHEN o.body_len > 0 THEN substring($11::bytea FROM o.body_at FOR o.body_len) END,
    updated_at = $10
FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::bytea[], $6::text[], $14::int4[], $15::int4[], $13::text[])
     AS o(notice_key, state, sent_at, provider_id, digest, last_error, body_at, body_len, sender)
WHERE l.notice_key = ANY($1::text[])
  AND ($7::date IS NULL OR l.period_start >= $7::date)
  AND ($8::date IS NULL OR l.period_start < $8::date)
  AND l.notice_key = o.notice_key
  AND l.state = 'claimed'
  AND l.run_id = $9`

// noticeOutcomePlan leaves noticeRecordOutcome, in its transaction, the one
// plan above: index scans only, and no nested loop.
const noticeOutcomePlan = `
SELECT set_config('enable_seqscan', 'off', true),
       set_config('enable_bitmapscan', 'off', true),
       set_config('enable_nestloop', 'off', true)`

// noticeExpireRetries marks missed the retry rows whose window closed
// before $1: nothing was sent and no pass may send them now.
const noticeExpireRetries = `
UPDATE notice_ledger
SET state = 'missed', updated_at = $1,
    last_error = COALESCE(last_error, '') || ' (window closed)'
WHERE state = 'retry'
  AND window_closes_at <= $1`

// noticeCancelRetries ends, as a recorded no-op, the retry rows of $1
// (keys, text[]) whose subscription is no longer active: state
// 'cancelled', reason 'cancelled', at $2. A row no longer in retry (a
// pass re-claimed it, an operator resolved it) is left as it is.
const noticeCancelRetries = `
UPDATE notice_ledger
SET state = 'cancelled', reason = 'cancelled', updated_at = $2
WHERE notice_key = ANY($1::text[])
  AND state = 'retry'`

// noticeRowColumns are the ledger's columns a Row holds: every one but
// the kept message's (message, message_dict, message_attempt; sql/0036),
// which only the proof reads (noticeMessageGet). Named rather than `*`, so
// that no look-up carries message bytes and the pass's role can be denied
// them by column privileges (docs/proof.md).
const noticeRowColumns = `notice_key, subscription_id, kind, period_start, revision, state,
    claimed_at, sent_at, message_id, provider_id, attempts, last_error, run_id,
    renews_at, window_closes_at, domain, redirected_to, cancel_token, supersedes,
    updated_at, message_sha256, settled_by, rule, time_zone, first_claimed_at,
    reason, channel, address_hmac, delivery_kind, delivery_attempt, sender`

// noticeListBySubscription returns every row of one subscription.
const noticeListBySubscription = `
SELECT ` + noticeRowColumns + ` FROM notice_ledger
WHERE subscription_id = $1
ORDER BY period_start, kind, revision`

// noticeGet returns one row by key.
const noticeGet = `SELECT ` + noticeRowColumns + ` FROM notice_ledger WHERE notice_key = $1`

// noticeListQuarantine returns claims with no recorded outcome claimed
// before $1, oldest first, at most $2.
const noticeListQuarantine = `
SELECT ` + noticeRowColumns + ` FROM notice_ledger
WHERE state = 'claimed' AND claimed_at < $1
ORDER BY claimed_at, notice_key
LIMIT $2`

// noticeCountQuarantine counts claims with no recorded outcome claimed
// before $1: the whole of what noticeListQuarantine cuts at its limit.
const noticeCountQuarantine = `
SELECT count(*) FROM notice_ledger
WHERE state = 'claimed' AND claimed_at < $1`

// noticeQuarantineStats counts claims with no recorded outcome that no
// run other than $1 still owns, and the oldest claim time.
//
// The oldest is found first, by an ordered scan of the quarantine index:
// right after a pass recorded its outcomes, that index still holds an
// entry for every row the pass claimed, each pointing at a dead row
// version until VACUUM. An index scan marks each one it visits dead in the
// index, once; a bitmap scan (what PostgreSQL picks for the count) never
// does, and read every one of those rows again on every count (0.4 s of a
// re-run right after a 200k pass). The count that follows skips them.
const noticeQuarantineStats = `
SELECT (SELECT claimed_at FROM notice_ledger
        WHERE state = 'claimed' AND run_id <> $1
        ORDER BY claimed_at LIMIT 1) AS oldest,
       (SELECT count(*) FROM notice_ledger
        WHERE state = 'claimed' AND run_id <> $1) AS count`

// noticeListRecent returns the business tuple and key of up to $3 email
// rows (an sms key is derived from other material)
// of the billing periods in [$1, $2), so a pass can check that its secret
// still derives the same keys. Recent walks the months newest first, so
// that the look-up reads the first rows of one month, not a sort of the
// whole history.
const noticeListRecent = `
SELECT notice_key, subscription_id, kind, period_start, revision
FROM notice_ledger
WHERE period_start >= $1::date AND period_start < $2::date AND channel = 'email'
LIMIT $3`

// noticeLockForResolve reads one row for an operator's decision.
const noticeLockForResolve = `
SELECT ` + noticeRowColumns + ` FROM notice_ledger WHERE notice_key = $1 FOR UPDATE`

// noticeResolve applies an operator's or a reconciliation's decision,
// by compare-and-set on the row's state and (for a reconciliation, which
// read the row without a lock) its attempt.
// $1 key, $2 new state, $3 sent_at (text, empty for none), $4 last_error note,
// $5 updated_at, $6 expected current state, $7 settled_by ('operator' or
// the event kind), $8 expected attempts or NULL for any, $9 true to clear
// sent_at (a "not sent" event overruled an acceptance).
const noticeResolve = `
UPDATE notice_ledger
SET state = $2,
    sent_at = CASE WHEN $9 THEN NULL ELSE COALESCE(sent_at, NULLIF($3, '')::timestamptz) END,
    last_error = NULLIF($4, ''),
    settled_by = NULLIF($7, ''),
    updated_at = $5
WHERE notice_key = $1 AND state = $6
  AND ($8::int IS NULL OR attempts = $8::int)`

// noticeResolutionInsert records who decided what, when and why, with
// the row's period so that prune removes it with its month.
// $7 period start (YYYY-MM-DD).
const noticeResolutionInsert = `
INSERT INTO notice_ledger_resolution
    (notice_key, from_state, to_state, resolved_by, reason, resolved_at, period_start)
VALUES ($1, $2, $3, $4, $5, $6, $7::date)`

// noticeListForSettlement makes Settle's transaction durable and finds
// the rows a batch of provider events may name, in one round trip.
//
// Durable: synchronous_commit as noticeClaimDurable sets it (the evidence
// a provider's webhook was answered for), evaluated once per statement by
// the outer side of the LEFT JOIN, which is read whatever the look-up
// finds. The statement therefore always returns at least one row; a row
// whose notice_key is the empty string found nothing and is skipped.
//
// Look-up: by notice key ($1, each month's primary key), provider id ($2,
// among the claims in quarantine, through the quarantine index: a provider
// id is stored with a sent outcome only, and no index on every sent row
// pays for finding notices already settled) or Message-ID
// without angle brackets ($3). A Message-ID is the key's first 32 hex
// characters @ a domain, so it is found by a range on the primary key (hex
// sorts below 'g' in the "C" collation) and then compared whole: there is
// no index on message_id for every claim to write.
//
// A settlement is found by its key first (Settle's find), so the provider
// id and Message-ID branches matter only when one of the batch's events
// names no key ($4) or a key the ledger lacks: otherwise their one-time
// filter (the miss CTE) skips them, and the statement reads the primary
// key only, which is what most webhook events (they echo the key) cost.
const noticeListForSettlement = `
SELECT COALESCE(r.notice_key, '') AS notice_key, COALESCE(r.message_id, '') AS message_id,
       COALESCE(r.provider_id, '') AS provider_id, COALESCE(r.state, '') AS state,
       COALESCE(r.period_start, 'epoch') AS period_start, COALESCE(r.attempts, 0) AS attempts,
       COALESCE(r.claimed_at, 'epoch') AS claimed_at, COALESCE(r.settled_by, '') AS settled_by
FROM (SELECT set_config('synchronous_commit',
          CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END,
          true)) AS durable(setting)
LEFT JOIN LATERAL (
    WITH k AS (
        SELECT notice_key, COALESCE(message_id, '') AS message_id,
               COALESCE(provider_id, '') AS provider_id, state, period_start,
               attempts, claimed_at, COALESCE(settled_by, '') AS settled_by
        FROM notice_ledger WHERE notice_key = ANY($1::text[])),
    miss AS (
        SELECT 1 WHERE $4::boolean
           OR EXISTS (SELECT 1 FROM unnest($1::text[]) AS q(key)
                      WHERE NOT EXISTS (SELECT 1 FROM k WHERE k.notice_key = q.key)))
    SELECT * FROM k
    UNION
    SELECT notice_key, COALESCE(message_id, ''), provider_id, state, period_start,
           attempts, claimed_at, COALESCE(settled_by, '')
    FROM notice_ledger
    WHERE state = 'claimed' AND provider_id IS NOT NULL AND provider_id = ANY($2::text[])
      AND EXISTS (SELECT 1 FROM miss)
    UNION
    SELECT l.notice_key, l.message_id, COALESCE(l.provider_id, ''), l.state, l.period_start,
           l.attempts, l.claimed_at, COALESCE(l.settled_by, '')
    FROM unnest($3::text[]) AS m(id)
    JOIN notice_ledger l
      ON l.notice_key >= split_part(m.id, '@', 1) COLLATE "C"
     AND l.notice_key < split_part(m.id, '@', 1) || 'g' COLLATE "C"
     AND l.message_id = m.id
    WHERE split_part(m.id, '@', 1) ~ '^[0-9a-f]{32}$'
      AND EXISTS (SELECT 1 FROM miss)
) AS r ON true`

// noticePartitionsEnsure creates the monthly partitions of the given
// dates that do not exist yet (see sql/0002); the common call, when they
// all exist, only looks their names up. $1 dates (text[], YYYY-MM-DD).
const noticePartitionsEnsure = `SELECT notice_ledger_ensure_partitions($1::date[])`

// noticeBackfill imports notices an earlier system already sent, as sent.
// A conflict (the notice is already in the ledger) is skipped and counted
// by the caller from the rows returned.
//
// $1 keys, $2 subscription ids, $3 kinds, $4 period starts,
// $5 revisions, $6 sent_at, $7 message ids (text[] each), $8 run id.
const noticeBackfill = `
INSERT INTO notice_ledger (
    notice_key, subscription_id, kind, period_start, revision, state,
    claimed_at, sent_at, message_id, run_id, provider_id)
SELECT b.notice_key, b.subscription_id, b.kind, b.period_start::date, b.revision::int, 'sent',
       b.sent_at::timestamptz, b.sent_at::timestamptz, b.message_id, $8, 'backfill'
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
     AS b(notice_key, subscription_id, kind, period_start, revision, sent_at, message_id)
ON CONFLICT DO NOTHING
RETURNING notice_key`

// noticeCountExpiringRetries counts the retry rows whose window closed by
// $1 (what noticeExpireRetries would mark missed).
const noticeCountExpiringRetries = `
SELECT count(*) FROM notice_ledger
WHERE state = 'retry' AND window_closes_at <= $1`

// noticeLedgerProbe fails when the ledger has not been migrated.
const noticeLedgerProbe = `SELECT 1 FROM notice_ledger LIMIT 0`

// noticeListClaimedByRun lists the keys one run claimed that still have no
// outcome, oldest first.
const noticeListClaimedByRun = `
SELECT notice_key FROM notice_ledger
WHERE state = 'claimed' AND run_id = $1
ORDER BY claimed_at, notice_key`

// noticePartitionList lists the monthly partitions of the ledger with
// their bounds (YYYY-MM-DD, upper exclusive) and the planner's row
// estimate (-1 before the first ANALYZE), oldest first. The DEFAULT
// partition has no bounds and is not listed.
const noticePartitionList = `
SELECT name, lo, hi, rows_estimate
FROM (SELECT c.relname::text AS name,
             substring(pg_get_expr(c.relpartbound, c.oid) FROM $re$FROM \('([0-9-]+)'\)$re$) AS lo,
             substring(pg_get_expr(c.relpartbound, c.oid) FROM $re$TO \('([0-9-]+)'\)$re$) AS hi,
             c.reltuples::bigint AS rows_estimate
      FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'notice_ledger'::regclass) p
WHERE lo IS NOT NULL AND hi IS NOT NULL
ORDER BY lo`

// noticePruneLock takes the lock that DETACH PARTITION (without
// CONCURRENTLY) takes anyway, first, so that the check for claims and the
// removal see the same rows: no pass can write the ledger until prune
// commits, which it does within milliseconds (catalog changes and a look
// at the quarantine index only). The caller sets lock_timeout first.
const noticePruneLock = `LOCK TABLE notice_ledger IN ACCESS EXCLUSIVE MODE`

// noticePruneLockTimeout bounds how long prune waits for that lock (and
// so how long a pass's statements queue behind it). $1 e.g. '5s'.
const noticePruneLockTimeout = `SELECT set_config('lock_timeout', $1, true)`

// noticeListClaimedBefore counts, per month older than $1, the rows still
// claimed (no recorded outcome), with up to $2 of their keys' first 12
// characters. Through the quarantine index of each old month.
const noticeListClaimedBefore = `
SELECT to_char(date_trunc('month', period_start), 'YYYY-MM-DD') AS month,
       count(*) AS count,
       (array_agg(left(notice_key, 12) ORDER BY notice_key))[1:$2] AS keys
FROM notice_ledger
WHERE period_start < $1::date AND state = 'claimed'
GROUP BY 1
ORDER BY 1`

// noticePartitionDetach detaches one month (%s: its quoted name).
const noticePartitionDetach = `ALTER TABLE notice_ledger DETACH PARTITION %s`

// noticePartitionDrop drops a detached month (%s: its quoted name).
const noticePartitionDrop = `DROP TABLE %s`

// noticeResolutionPrune removes the decisions recorded on rows of periods
// in [$1, $2) and returns how many.
const noticeResolutionPrune = `
DELETE FROM notice_ledger_resolution
WHERE period_start >= $1::date AND period_start < $2::date`

// noticeEvidenceInsert keeps a batch of provider events as evidence, each
// under its notice and attempt; an event already kept (a replay: same
// notice, attempt, event and time) is skipped by the unique index and is
// absent from the result.
//
// $1 keys, $2 period starts, $3 attempts, $4 kinds, $5 events,
// $6 occurred_at (text, empty for none), $7 details (text[] each), $8 recorded_at.
const noticeEvidenceInsert = `
INSERT INTO notice_evidence
    (notice_key, period_start, attempt, kind, event, occurred_at, detail, recorded_at)
SELECT e.notice_key, e.period_start::date, e.attempt::int, e.kind, e.event,
       NULLIF(e.occurred_at, '')::timestamptz, NULLIF(e.detail, ''), $8
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
     AS e(notice_key, period_start, attempt, kind, event, occurred_at, detail)
ON CONFLICT DO NOTHING
RETURNING notice_key, attempt, event, occurred_at`

// noticeEvidenceUnmatchedInsert keeps a batch of provider events that
// name no notice the ledger holds (the second witness), under the first 32
// hex characters of the key, and returns the key32 of each it kept; a
// replay is skipped by the unique index.
//
// $1 key32s, $2 provider ids, $3 attempts (0: none named), $4 kinds,
// $5 states the events prove, $6 events, $7 occurred_at (text, empty for none),
// $8 details (text[] each), $9 recorded_at, $10 recorded_by.
const noticeEvidenceUnmatchedInsert = `
INSERT INTO notice_evidence_unmatched
    (key32, provider_id, attempt, kind, state, event, occurred_at, detail, recorded_at, recorded_by)
SELECT e.key32, NULLIF(e.provider_id, ''), e.attempt::int, e.kind, e.state, e.event,
       NULLIF(e.occurred_at, '')::timestamptz, NULLIF(e.detail, ''), $9, $10
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
     AS e(key32, provider_id, attempt, kind, state, event, occurred_at, detail)
ON CONFLICT DO NOTHING
RETURNING key32`

// noticeEvidenceUnmatchedPrune removes the unmatched evidence recorded
// before $1 (prune's horizon) and returns how many.
const noticeEvidenceUnmatchedPrune = `
DELETE FROM notice_evidence_unmatched WHERE recorded_at < $1`

// noticeEvidenceList returns the evidence kept for the notices of keys,
// by notice, attempt and time.
const noticeEvidenceList = `
SELECT notice_key, attempt, kind, event, occurred_at, COALESCE(detail, '') AS detail, recorded_at
FROM notice_evidence
WHERE notice_key = ANY($1::text[])
ORDER BY notice_key, attempt, occurred_at NULLS FIRST, recorded_at, event`

// noticeMessagePrune removes the messages notice_message keeps for
// notices of periods before $1 (proof of notice), with the months prune
// removed (whose rows held the current attempts' messages).
const noticeMessagePrune = `
DELETE FROM notice_message WHERE period_start < $1::date`

// noticeMessageGet returns the compressed message of one attempt and its
// dictionary's id, format and bytes (0, deflate and empty for none): $1
// period_start, $2 key (hex), $3 attempt.
// The ledger row holds the message of the attempt that handed one over
// last (sql/0036); notice_message those of earlier attempts and of the
// notices recorded before sql/0036. Both by their primary keys.
const noticeMessageGet = `
SELECT x.body, x.dict AS dict_id, COALESCE(d.format, 'deflate') AS format, COALESCE(d.body, '') AS dict
FROM (SELECT l.message AS body, l.message_dict AS dict, 0 AS pick
      FROM notice_ledger l
      WHERE l.notice_key = $2 AND l.period_start = $1::date AND l.message_attempt = $3
      UNION ALL
      SELECT m.body, m.dict, 1
      FROM notice_message m
      WHERE m.period_start = $1::date AND m.key = decode($2, 'hex') AND m.attempt = $3) x
LEFT JOIN notice_message_dict d ON d.id = x.dict
ORDER BY x.pick
LIMIT 1`

// noticeMessageDict returns dictionary $1's bytes.
const noticeMessageDict = `SELECT body FROM notice_message_dict WHERE id = $1`

// noticeMessageEarlier returns the messages notice_message keeps for the
// attempts of notice $2 (hex) of period $1 before attempt $3 (the
// current), by attempt: each with the digest recorded for it at send time
// (NULL when kept before sql/0041) and its dictionary's id, format and
// bytes (0, deflate and empty for none). By the primary key.
const noticeMessageEarlier = `
SELECT m.attempt, m.digest, m.body, m.dict AS dict_id,
       COALESCE(d.format, 'deflate') AS format, COALESCE(d.body, '') AS dict
FROM notice_message m
LEFT JOIN notice_message_dict d ON d.id = m.dict
WHERE m.period_start = $1::date AND m.key = decode($2, 'hex') AND m.attempt < $3
ORDER BY m.attempt`

// noticeMessageSample picks at most $1 ledger rows whose current attempt
// has a digest or that were attempted more than once, in random order, or
// every such row when $1 is NULL; $2 and $3 bound period_start
// (YYYY-MM-DD, NULL for no bound). It returns one row per attempt to
// check: the current attempt of each picked row with a digest (current
// true), with its compressed message (NULL when none was kept: the row's
// own when it is of the current attempt, else notice_message's), and each
// earlier attempt notice_message keeps for a picked row (current false),
// with the digest kept with it (NULL before sql/0041). Each carries its
// period, key, attempt, digest and the dictionary's id, format and bytes
// (0, deflate and empty for none).
const noticeMessageSample = `
WITH picked AS (
    SELECT l.period_start, l.notice_key, l.attempts, l.message_sha256,
           l.message_attempt, l.message_dict, l.message
    FROM notice_ledger l
    WHERE (l.message_sha256 IS NOT NULL OR l.attempts > 1)
      AND ($2::date IS NULL OR l.period_start >= $2::date)
      AND ($3::date IS NULL OR l.period_start < $3::date)
    ORDER BY CASE WHEN $1::integer IS NULL THEN 0 ELSE random() END, l.period_start, l.notice_key
    LIMIT $1)
SELECT p.period_start, p.notice_key, p.attempts AS attempt, p.message_sha256 AS digest, true AS current,
       COALESCE(CASE WHEN p.message_attempt = p.attempts THEN p.message END, m.body) AS body,
       COALESCE(d.id, 0) AS dict_id, COALESCE(d.format, 'deflate') AS format, COALESCE(d.body, '') AS dict
FROM picked p
LEFT JOIN notice_message m
  ON p.message_attempt IS DISTINCT FROM p.attempts
 AND m.period_start = p.period_start AND m.key = decode(p.notice_key, 'hex') AND m.attempt = p.attempts
LEFT JOIN notice_message_dict d
  ON d.id = CASE WHEN p.message_attempt = p.attempts THEN p.message_dict ELSE m.dict END
WHERE p.message_sha256 IS NOT NULL
UNION ALL
SELECT p.period_start, p.notice_key, m.attempt, m.digest, false,
       m.body, COALESCE(d.id, 0), COALESCE(d.format, 'deflate'), COALESCE(d.body, '')
FROM picked p
JOIN notice_message m
  ON m.period_start = p.period_start AND m.key = decode(p.notice_key, 'hex') AND m.attempt < p.attempts
LEFT JOIN notice_message_dict d ON d.id = m.dict`

// noticeEvidencePrune removes the evidence kept on rows of periods before
// $1 (the months prune removed, and any left by a prune that stopped
// between its two transactions).
const noticeEvidencePrune = `
DELETE FROM notice_evidence WHERE period_start < $1::date`

// noticeListRetry returns one page of the email rows of kind $1 in state
// retry (the sms channel re-claims its own, package scan's sms stage)
// whose window is still open at $2, in key order after $3, at most $4:
// what a pass may claim again. The pass looks up each row's subscription
// itself (a row whose subscription moved to another period, revision or
// shard is not its to retry).
const noticeListRetry = `
SELECT notice_key, subscription_id, kind, period_start, revision
FROM notice_ledger
WHERE state = 'retry' AND kind = $1 AND channel = 'email'
  AND (window_closes_at IS NULL OR window_closes_at > $2)
  AND notice_key > $3
ORDER BY notice_key
LIMIT $4`

// shadowInsert records a batch of notices a shadow pass would have
// claimed, once each: a notice already recorded (by an earlier shadow
// pass) keeps its first row and is absent from the result.
//
// $1 subscription ids, $2 kinds, $3 period starts, $4 revisions, $5 keys,
// $6 opens_at, $7 closes_at, $8 renews_at, $9 rules, $10 time zones
// (text[] each), $11 would_claim_at (the pass's now), $12 run id.
const shadowInsert = `
INSERT INTO notice_shadow (
    subscription_id, kind, period_start, revision, notice_key,
    would_claim_at, opens_at, closes_at, renews_at, rule, time_zone, run_id)
SELECT c.subscription_id, c.kind, c.period_start::date, c.revision::int, c.notice_key,
       $11, c.opens_at::timestamptz, c.closes_at::timestamptz, c.renews_at::timestamptz,
       NULLIF(c.rule, ''), NULLIF(c.time_zone, ''), $12
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
            $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
     AS c(subscription_id, kind, period_start, revision, notice_key,
          opens_at, closes_at, renews_at, rule, time_zone)
ON CONFLICT DO NOTHING
RETURNING notice_key`

// shadowPrune removes the shadow rows of periods before $1.
const shadowPrune = `DELETE FROM notice_shadow WHERE period_start < $1::date`

// shadowLegacyCreate is the session's table of a legacy sender's sends,
// one row a send, for shadowReportCounts; dropped at the end of the
// transaction.
const shadowLegacyCreate = `
CREATE TEMPORARY TABLE shadow_legacy (
    subscription_id text NOT NULL,
    kind            text NOT NULL,
    period_start    date NOT NULL,
    revision        integer NOT NULL,
    sent_at         timestamptz NOT NULL
) ON COMMIT DROP`

// shadowLegacyInsert adds a batch of legacy sends: $1 subscription ids,
// $2 kinds, $3 period starts, $4 revisions, $5 sent_at (text[] each).
const shadowLegacyInsert = `
INSERT INTO shadow_legacy
SELECT c.subscription_id, c.kind, c.period_start::date, c.revision::int, c.sent_at::timestamptz
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
     AS c(subscription_id, kind, period_start, revision, sent_at)`

// shadowReportCounts compares the legacy sends with the shadow rows, in
// one walk of each: legacy_sends (lines), legacy_notices (distinct
// notices), duplicates (notices sent more than once), outside_window
// (sends with no shadow row, or before its window opened or after it
// closed), missed_by_legacy (shadow rows the legacy sender never sent)
// and would_send (shadow rows).
const shadowReportCounts = `
WITH l AS (
    SELECT subscription_id, kind, period_start, revision, count(*) AS n
    FROM shadow_legacy
    GROUP BY 1, 2, 3, 4)
SELECT
    (SELECT count(*) FROM shadow_legacy) AS legacy_sends,
    (SELECT count(*) FROM l) AS legacy_notices,
    (SELECT count(*) FROM l WHERE n > 1) AS duplicates,
    (SELECT count(*) FROM shadow_legacy x
     LEFT JOIN notice_shadow s USING (subscription_id, kind, period_start, revision)
     WHERE s.subscription_id IS NULL OR x.sent_at < s.opens_at OR x.sent_at >= s.closes_at) AS outside_window,
    (SELECT count(*) FROM notice_shadow s
     WHERE NOT EXISTS (SELECT 1 FROM l
                       WHERE l.subscription_id = s.subscription_id AND l.kind = s.kind
                         AND l.period_start = s.period_start AND l.revision = s.revision)) AS missed_by_legacy,
    (SELECT count(*) FROM notice_shadow) AS would_send`

// noticeRetryOldest is the first claim time of the oldest row in state
// retry (its first attempt's, else its latest's), NULL when none is: read
// through the retry index, which holds only the retry rows.
const noticeRetryOldest = `
SELECT min(COALESCE(first_claimed_at, claimed_at)) FROM notice_ledger
WHERE state = 'retry'`

// noticeSuppressionAdd puts a batch of digests on the suppression list; a
// digest already on it for that channel keeps its first row and is absent
// from the result. $1 channels, $2 digests (hex), $3 reasons, $4 sources,
// $5 notice keys (empty for none), $7 key ids (hex, empty for NULL)
// (text[] each), $6 created_at.
const noticeSuppressionAdd = `
INSERT INTO notice_suppression (channel, address_hmac, reason, source, notice_key, created_at, key_id)
SELECT x.channel, decode(x.h, 'hex'), x.reason, x.source, NULLIF(x.notice_key, ''), $6,
       decode(NULLIF(x.key_id, ''), 'hex')
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $7::text[])
     AS x(channel, h, reason, source, notice_key, key_id)
ON CONFLICT DO NOTHING
RETURNING 1`

// noticeSuppressionRemove takes digests of one channel off the list (an
// address's under the current secret and each previous one) and returns
// one row per entry removed. $1 channel, $2 digests (bytea[]).
const noticeSuppressionRemove = `
DELETE FROM notice_suppression WHERE channel = $1 AND address_hmac = ANY($2::bytea[])
RETURNING 1`

// noticeSuppressionList returns the list, oldest first, each digest as its
// first 12 hex characters (enough to tell entries apart; the address is
// not recoverable from it) with the id of the secret it is keyed under
// (hex, empty when unknown), at most $1 rows; with $2 (text[], hex) not
// empty, only the entries keyed under one of those ids.
const noticeSuppressionList = `
SELECT channel, left(encode(address_hmac, 'hex'), 12) AS digest, reason, source,
       COALESCE(notice_key, '') AS notice_key, created_at, COALESCE(encode(key_id, 'hex'), '') AS key_id
FROM notice_suppression
WHERE cardinality($2::text[]) = 0 OR encode(key_id, 'hex') = ANY($2::text[])
ORDER BY created_at, channel, address_hmac
LIMIT $1`

// noticeSuppressionCount counts the list's entries by channel.
const noticeSuppressionCount = `
SELECT channel, count(*) AS count FROM notice_suppression GROUP BY channel ORDER BY channel`

// noticeSuppressionCountByKey counts the list's entries by channel and the
// id of the secret they are keyed under (hex, empty when unknown).
const noticeSuppressionCountByKey = `
SELECT channel, COALESCE(encode(key_id, 'hex'), '') AS key_id, count(*) AS count
FROM notice_suppression GROUP BY 1, 2 ORDER BY 1, 2`

// noticeSuppressionAnyNotUnder reports whether channel $1's list has an
// entry not keyed under key id $2 (bytea): NULL (unknown) counts. A pass
// with previous secrets asks once; it stops at the first such entry, and
// reads the whole list only when every entry is the current secret's.
const noticeSuppressionAnyNotUnder = `
SELECT EXISTS (SELECT 1 FROM notice_suppression WHERE channel = $1 AND key_id IS DISTINCT FROM $2::bytea)`

// noticeSuppressionSummaryRead reads the chunks of the list's summary
// (sql/0042) written by a transaction that a snapshot whose xmin was $1
// (xid8, text; "0" for all) did not see, and the xmin of this statement's
// own snapshot, which the next read passes: one row with NULL chunk when
// none changed. One index scan of notice_suppression_summary_changed.
// The bits travel as varbit_send's bytes (hex through lib/pq: 256
// characters a chunk, not bit_out's 1,024).
const noticeSuppressionSummaryRead = `
SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin, s.chunk, varbit_send(s.bits) AS bits
FROM (SELECT 1) x
LEFT JOIN notice_suppression_summary s ON s.changed >= $1::xid8`

// noticeSuppressionSummaryLoad is noticeSuppressionSummaryRead for a
// first read: every chunk with a bit set ($1 is not read; a scan of the
// 16,384 rows).
const noticeSuppressionSummaryLoad = `
SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin, s.chunk, varbit_send(s.bits) AS bits
FROM (SELECT $1::text) x
LEFT JOIN notice_suppression_summary s ON s.bits <> B'0'::bit(1024)`

// noticeSuppressionMatch returns the 1-based positions in $2 (bytea[]) of
// the digests on channel $1's list: one statement per batch of a pass,
// one probe per element of the digest's hash index (sql/0022), about half
// the cost of the primary key's descent. The channel is compared outside
// the sub-select on purpose: written as "s.channel = $1 AND ..." inside
// it, the planner prefers an index-only scan of the primary key (channel,
// address_hmac). The index is lossy; PostgreSQL re-checks the digest on
// the row, so only an exact digest of that channel matches. It writes
// nothing: the dry run's read-only transaction runs it.
const noticeSuppressionMatch = `
SELECT x.i::int
FROM unnest($2::bytea[]) WITH ORDINALITY AS x(h, i)
WHERE $1 IN (SELECT s.channel FROM notice_suppression s WHERE s.address_hmac = x.h)`

// noticeSuppressionMatchRekey is noticeSuppressionMatch across a secret
// rotation (issue 38), as in noticeClaim: $2 holds the digests as hex
// (text[], empty for none), and an entry found under one of an element's
// previous digests ($3, parallel to $2, hex joined by commas) is
// re-recorded under its $2 digest with key id $4 (hex) by rekey, rekeyed
// and unkeyed, and the element matches.
const noticeSuppressionMatchRekey = `
WITH rekey AS MATERIALIZED (
    SELECT DISTINCT ON (s.channel, s.address_hmac)
           s.channel, s.address_hmac AS old, decode(r.h, 'hex') AS new,
           s.reason, s.source, s.notice_key, s.created_at
    FROM unnest($2::text[], $3::text[]) AS r(h, prev)
    CROSS JOIN LATERAL unnest(string_to_array(NULLIF(r.prev, ''), ',')) AS p(h)
    JOIN notice_suppression s ON s.address_hmac = decode(p.h, 'hex')
    WHERE r.h <> '' AND p.h <> r.h AND s.channel = $1),
rekeyed AS (
    INSERT INTO notice_suppression (channel, address_hmac, reason, source, notice_key, created_at, key_id)
    SELECT channel, new, reason, source, notice_key, created_at, decode(NULLIF($4, ''), 'hex') FROM rekey
    ON CONFLICT DO NOTHING),
unkeyed AS (
    DELETE FROM notice_suppression s USING rekey k
    WHERE s.channel = k.channel AND s.address_hmac = k.old)
SELECT x.i::int
FROM unnest($2::text[]) WITH ORDINALITY AS x(h, i)
WHERE x.h <> ''
  AND ($1 IN (SELECT s.channel FROM notice_suppression s WHERE s.address_hmac = decode(x.h, 'hex'))
       OR decode(x.h, 'hex') IN (SELECT k.new FROM rekey k))`

// noticeSuppressionFromLedger puts on the list the recipients of the
// notices named in $1 (keys), each with its reason $2 and source $3
// (text[] each), from the digest the claim kept (rows without one add
// nothing): what a hard bounce, complaint or provider suppression
// settled by Settle adds, in Settle's transaction. $4 created_at.
const noticeSuppressionFromLedger = `
INSERT INTO notice_suppression (channel, address_hmac, reason, source, notice_key, created_at)
SELECT l.channel, l.address_hmac, r.reason, r.source, l.notice_key, $4
FROM unnest($1::text[], $2::text[], $3::text[]) AS r(notice_key, reason, source)
JOIN notice_ledger l ON l.notice_key = r.notice_key
WHERE l.address_hmac IS NOT NULL
ON CONFLICT DO NOTHING`

// noticeRecordUnreached records notices a pass will not send by their
// channel (the address is suppressed, or the row has none), as failed with
// the reason in last_error and no attempt: so that the next channel takes
// them and scan undelivered lists them. A notice already in the ledger is
// skipped. $1 keys, $2 subscription ids, $3 kinds, $4 period starts,
// $5 revisions, $6 renews_at, $7 window_closes_at, $8 domains,
// $9 digests (hex) (text[] each), $10 now, $11 run id, $12 channel,
// $13 reason, $14 state: 'failed' (nothing left to try), or 'retry' for
// a malformed address with no other channel, which waits for the address
// to be fixed (reason invalid_address).
const noticeRecordUnreached = `
INSERT INTO notice_ledger (
    notice_key, subscription_id, kind, period_start, revision, state,
    claimed_at, run_id, renews_at, window_closes_at, domain, channel,
    address_hmac, last_error, attempts, updated_at)
SELECT c.notice_key, c.subscription_id, c.kind, c.period_start::date, c.revision::int, $14,
       $10, $11, c.renews_at::timestamptz, c.window_closes_at::timestamptz, NULLIF(c.domain, ''), $12,
       decode(NULLIF(c.h, ''), 'hex'), $13, 0, $10
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
            $6::text[], $7::text[], $8::text[], $9::text[])
     AS c(notice_key, subscription_id, kind, period_start, revision,
          renews_at, window_closes_at, domain, h)
ON CONFLICT DO NOTHING
RETURNING notice_key`

// noticeCountInvalidAddress counts the retry rows with reason
// invalid_address whose window is open at $1.
const noticeCountInvalidAddress = `
SELECT count(*) FROM notice_ledger
WHERE state = 'retry' AND last_error = 'invalid_address' AND window_closes_at > $1`

// noticeMarkUnreached fails the retry rows of $1 (keys) whose address is
// now suppressed, instead of re-claiming them: reason $2, at $3.
const noticeMarkUnreached = `
UPDATE notice_ledger
SET state = 'failed', last_error = $2, updated_at = $3
WHERE notice_key = ANY($1::text[]) AND state = 'retry'
RETURNING notice_key`

// noticeListUndelivered returns the notices that reached the customer by
// no channel: grouped by business tuple, every channel's row failed,
// missed or still claimed (quarantine), or sent but undeliverable by
// evidence, or sent, unconfirmed and its window closed at $3; none
// delivered, none retry (a retry is still on its way) but a retry
// waiting with invalid_address while its window is open,, with the reason of
// the last channel tried (sms after email), touched at or after $1, at
// most $2. A notice with an invalid_address row gives that reason (the
// data to fix). The reason of an undeliverable row is the kind of its evidence
// (bounce_soft, blocked, dropped). No address: the ledger holds none.
const noticeListUndelivered = `
SELECT subscription_id, kind, to_char(period_start, 'YYYY-MM-DD') AS period_start, revision,
       string_agg(channel, ',' ORDER BY channel) AS channels,
       (array_agg(reason ORDER BY reason = 'invalid_address' DESC, channel DESC))[1] AS reason,
       max(at) AS at
FROM (SELECT subscription_id, kind, period_start, revision, channel, state,
             COALESCE(updated_at, claimed_at) AS at,
             CASE WHEN state = 'missed' THEN 'missed'
                  WHEN state = 'claimed' THEN 'quarantine'
                  WHEN last_error = 'suppressed_address' THEN 'suppressed'
                  WHEN last_error = 'no_usable_address' THEN 'no_usable_address'
                  WHEN state = 'retry' AND last_error = 'invalid_address' THEN 'invalid_address'
                  WHEN settled_by IN ('bounce_hard', 'complaint') THEN 'bounced'
                  WHEN delivery = 'undeliverable' AND delivery_kind IN ('bounce_soft', 'blocked', 'dropped') THEN delivery_kind
                  WHEN state = 'sent' AND delivery = 'unconfirmed' THEN 'unconfirmed'
                  ELSE 'failed' END AS reason,
             state IN ('failed', 'missed', 'claimed')
                  OR (state = 'retry' AND last_error = 'invalid_address' AND window_closes_at > $3)
                  OR (state = 'sent' AND (delivery = 'undeliverable'
                                          OR (delivery = 'unconfirmed' AND window_closes_at <= $3))) AS unreached
      FROM (SELECT ` + noticeRowColumns + `, ` + noticeDeliveryOf + ` AS delivery FROM notice_ledger n) l0) l
GROUP BY subscription_id, kind, period_start, revision
HAVING bool_and(unreached) AND max(at) >= $1
ORDER BY max(at), subscription_id, kind, period_start, revision
LIMIT $2`

// noticeSuppressionAny reports whether channel $1's list has any entry
// (one probe of the primary key).
const noticeSuppressionAny = `
SELECT EXISTS (SELECT 1 FROM notice_suppression WHERE channel = $1)`

// The epoch statements find where the database is now from its WAL
// timeline (the first 8 hex digits of the WAL file name of its current
// position) and that position. Both functions are open to every role; on
// a standby pg_current_wal_lsn fails (recovery is in progress).

// noticeEpochCheckPass records a pass's epoch where the database is now,
// unless the last epoch recorded is on another timeline or ahead of the
// current WAL position (then it records nothing). It returns where the
// database is, whether the epoch was recorded, and the last epoch before
// it (NULLs when there is none). With the epoch it records the witness a
// later switchover is judged by (sql/0027): how many standbys were in
// sync_state 'sync' (0 where this role may not read their state), the
// synchronous_commit its claims commit with (noticeClaimDurable's: on, or
// remote_apply where that is the session's), and the system identifier.
// One statement
// per pass.
// $1 run id, $2 recorded_at.
const noticeEpochCheckPass = `
WITH here AS (
    SELECT ('x' || lpad(left(pg_walfile_name(pg_current_wal_lsn()), 8), 16, '0'))::bit(64)::bigint AS timeline,
           pg_current_wal_lsn() AS lsn,
           (SELECT count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication)::int AS sync_standbys,
           CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END AS sync_commit,
           (SELECT system_identifier::text FROM pg_control_system()) AS system_id),
last AS (
    SELECT id, kind, run_id, timeline, lsn, recorded_at, sync_standbys, sync_commit, system_id
    FROM notice_ledger_epoch ORDER BY id DESC LIMIT 1),
ins AS (
    INSERT INTO notice_ledger_epoch (kind, run_id, timeline, lsn, recorded_at, sync_standbys, sync_commit, system_id)
    SELECT 'pass', $1, here.timeline, here.lsn, $2, here.sync_standbys, here.sync_commit, here.system_id FROM here
    WHERE NOT EXISTS (SELECT 1 FROM last
                      WHERE last.timeline IS NOT NULL
                        AND (last.timeline <> here.timeline OR last.lsn > here.lsn))
    RETURNING id)
SELECT here.timeline, here.lsn::text AS lsn, here.system_id, EXISTS (SELECT 1 FROM ins) AS recorded,
       last.id, last.kind, last.run_id, last.timeline AS last_timeline, last.lsn::text AS last_lsn,
       last.recorded_at, last.sync_standbys, last.sync_commit, last.system_id AS last_system_id
FROM here LEFT JOIN last ON true`

// noticeEpochCheckOnly is noticeEpochCheckPass that records nothing (the
// dry run's, in its read-only transaction): recorded says whether a pass
// would record its epoch, false when it would refuse or judge a switch.
// No parameter.
const noticeEpochCheckOnly = `
WITH here AS (
    SELECT ('x' || lpad(left(pg_walfile_name(pg_current_wal_lsn()), 8), 16, '0'))::bit(64)::bigint AS timeline,
           pg_current_wal_lsn() AS lsn,
           (SELECT system_identifier::text FROM pg_control_system()) AS system_id),
last AS (
    SELECT id, kind, run_id, timeline, lsn, recorded_at, sync_standbys, sync_commit, system_id
    FROM notice_ledger_epoch ORDER BY id DESC LIMIT 1)
SELECT here.timeline, here.lsn::text AS lsn, here.system_id,
       NOT EXISTS (SELECT 1 FROM last
                   WHERE last.timeline IS NOT NULL
                     AND (last.timeline <> here.timeline OR last.lsn > here.lsn)) AS recorded,
       last.id, last.kind, last.run_id, last.timeline AS last_timeline, last.lsn::text AS last_lsn,
       last.recorded_at, last.sync_standbys, last.sync_commit, last.system_id AS last_system_id
FROM here LEFT JOIN last ON true`

// noticeEpochTimelineHistory reads the history file of timeline $1 from
// the server's pg_wal (pg_read_file: a superuser, or a role granted
// EXECUTE on pg_read_file(text); pg_read_server_files alone does not
// grant it, and is not needed for a path inside the data directory).
// Each line names a
// parent timeline, the LSN where the next one branched from it, and why.
const noticeEpochTimelineHistory = `
SELECT pg_read_file('pg_wal/' || lpad(upper(to_hex($1::bigint)), 8, '0') || '.history')`

// noticeEpochSwitchover records the epoch of a pass that found the
// database switched over losslessly (kind 'switchover', the switch in
// reason) and went on, with the same witness as a pass's epoch.
// $1 run id, $2 recorded_at, $3 reason.
const noticeEpochSwitchover = `
INSERT INTO notice_ledger_epoch (kind, run_id, timeline, lsn, recorded_at, reason, sync_standbys, sync_commit, system_id)
SELECT 'switchover', $1, ('x' || lpad(left(pg_walfile_name(pg_current_wal_lsn()), 8), 16, '0'))::bit(64)::bigint,
       pg_current_wal_lsn(), $2, $3,
       (SELECT count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication)::int,
       CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END,
       (SELECT system_identifier::text FROM pg_control_system())
RETURNING id`

// noticeEpochAcknowledge records an acknowledged epoch (scan recover)
// where the database is now, with the same witness as a pass's epoch.
// $1 kind, $2 run id, $3 recorded_by, $4 reason, $5 since, $6 recorded_at.
const noticeEpochAcknowledge = `
INSERT INTO notice_ledger_epoch (kind, run_id, timeline, lsn, recorded_at, recorded_by, reason, since,
                                 sync_standbys, sync_commit, system_id)
SELECT $1, $2, ('x' || lpad(left(pg_walfile_name(pg_current_wal_lsn()), 8), 16, '0'))::bit(64)::bigint,
       pg_current_wal_lsn(), $6, $3, $4, $5,
       (SELECT count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication)::int,
       CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END,
       (SELECT system_identifier::text FROM pg_control_system())
RETURNING id, kind, run_id, timeline, lsn::text AS lsn, recorded_at, recorded_by, reason, since,
          sync_standbys, sync_commit, system_id`

// noticeEpochLast returns the last epoch recorded.
const noticeEpochLast = `
SELECT id, kind, run_id, timeline, lsn::text AS lsn, recorded_at, recorded_by, reason, since,
       sync_standbys, sync_commit, system_id
FROM notice_ledger_epoch ORDER BY id DESC LIMIT 1`

// noticeReplication says whether the server is a standby, and of its
// standbys how many there are, how many are synchronous, and how many
// this role may not see the state of (pg_stat_replication shows a role
// without pg_read_all_stats only the walsenders' pids).
const noticeReplication = `
SELECT pg_is_in_recovery() AS standby,
       current_setting('synchronous_standby_names') AS sync_names,
       count(r.pid)::int AS standbys,
       count(r.pid) FILTER (WHERE r.sync_state IN ('sync', 'quorum'))::int AS synchronous,
       count(r.pid) FILTER (WHERE r.sync_state IS NULL)::int AS hidden,
       current_setting('synchronous_commit') AS commit_local
FROM pg_stat_replication r`

// noticeDeliveryOf is a notice's delivery (DeliveryOf) as an SQL
// expression over the notice_ledger row aliased n: the kind of the
// evidence of its current attempt sorted into delivered or undeliverable,
// else unconfirmed while sent, else empty. DeliverySQL gives it for another
// alias.
const noticeDeliveryOf = `(CASE WHEN n.delivery_kind <> '' AND n.delivery_attempt = GREATEST(n.attempts, 1)
           THEN CASE n.delivery_kind WHEN 'delivered' THEN 'delivered' ELSE 'undeliverable' END
      WHEN n.state = 'sent' THEN 'unconfirmed' ELSE '' END)`

// noticeUpdateDelivery records the delivery evidence of rows $1 (keys) of
// periods $2 (dates): for attempt $3 (int[]), the event kind $4 (text[]:
// 'delivered' or an undeliverable kind). Evidence of an earlier attempt
// than the one recorded changes nothing; for the same attempt, an
// undeliverable kind already recorded stands (a server that took a
// message may bounce it later, never the reverse). One statement per
// Settle batch, only for the rows whose events say either.
const noticeUpdateDelivery = `
UPDATE notice_ledger l
SET delivery_kind = CASE WHEN l.delivery_attempt = d.attempt AND l.delivery_kind NOT IN ('', 'delivered')
                         THEN l.delivery_kind ELSE d.kind END,
    delivery_attempt = d.attempt
FROM unnest($1::text[], $2::date[], $3::int[], $4::text[]) AS d(notice_key, period_start, attempt, kind)
WHERE l.notice_key = d.notice_key AND l.period_start = d.period_start
  AND l.delivery_attempt <= d.attempt
  AND (l.delivery_attempt <> d.attempt OR l.delivery_kind IN ('', 'delivered'))
  AND (l.delivery_attempt <> d.attempt OR l.delivery_kind <> d.kind)`
