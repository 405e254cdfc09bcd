package subscription

import "scan/internal/ledger"

// The source's statements, by name, noun first. Each is a template whose
// slots ({rel}, {cols}, {anchor}) take identifiers only, known at
// start-up: the quoted relation, the select list of the columns it has
// (selectList), and a kind's quoted anchor column. Open fills them
// once; every value is a parameter numbered in the template.
//
// The statements on one window group share the group parameters $1-$7,
// which inGroup reads (Source.group):
//
//	$1 shards (int), $2 this shard (int): the shard's rows;
//	$3 lo, $4 hi (timestamptz): the anchor lies in (lo, hi];
//	$5 the group's jurisdiction, NULL for the default group;
//	$6 the overrides (text[]) the default group leaves out, NULL for none;
//	$7 (bool) also the rows with no renews_at (Group.WithNullTimes).
//
// A NULL (or false) parameter switches its predicate off. lib/pq sends
// each statement unnamed, so PostgreSQL plans it with its parameters'
// values: the switched-off predicates fold away and the plan is the one
// of the predicates that apply (the ledger's partitions, too, are pruned
// when the plan is made; source_internal_test.go).

// inShard: the active rows of this shard. A stable partition: the first
// 32 bits of md5(id), modulo the shards; the same in every PostgreSQL
// version, unlike hashtext. $1 shards, $2 this shard.
const inShard = `s.status = 'active'
  AND ` + shardOnly

// shardOnly: the rows of this shard, whatever their status.
const shardOnly = `($1::int <= 1 OR mod(('x' || substr(md5(s.id::text), 1, 8))::bit(32)::bigint, $1::int) = $2::int)`

// inGroup: the active rows of this shard in one window group: of its
// jurisdictions, with the anchor in (lo, hi]; or, when $7, with no
// renews_at at all, whatever their jurisdiction, so that the first group
// counts them invalid (a NULL anchor other than renews_at is not due: not
// invalid). This is the window/NULL fragment, the only one.
const inGroup = inShard + `
  AND ((($5::text IS NULL OR s.jurisdiction = $5::text)
        AND ($6::text[] IS NULL OR s.jurisdiction IS NULL OR s.jurisdiction <> ALL($6::text[]))
        AND s.{anchor} > $3 AND s.{anchor} <= $4)
       OR ($7::bool AND s.renews_at IS NULL))`

// sameNotice matches a ledger row l with its subscription row s on the
// business tuple and the email channel, as the ledger's unique index has
// it (an sms row is the sms channel's statements'); each statement adds
// the kind. Every source statement that joins the ledger uses it.
const sameNotice = `l.subscription_id = s.id::text AND l.period_start = s.period_start::date AND l.revision = COALESCE(s.notice_revision, 0) AND l.channel = 'email'`

// fromPeriod bounds the ledger's side of a join by the window's earliest
// billing period ($10, NULL when unknown; PeriodFrom). It is implied by
// the join (every row of the window has a period at or after it), and, a
// value known when the statement is planned, it prunes the ledger's past
// months: without it each page's anti-join walks every month's rows of the
// page's subscriptions, so the first pass grows with the ledger's history.
// A subscription whose period moves earlier while the pass runs may then
// be read as open; its claim meets the business-tuple index and is
// suppressed, as any concurrent claim is.
const fromPeriod = `($10::date IS NULL OR l.period_start >= $10::date)`

// waitingInvalid is a ledger row l that no run handled: an email notice
// waiting in retry with reason invalid_address (a malformed address and
// no other channel). Each pass re-reads it with the kind's retry rows and
// counts it invalid, so the counts of rows handled elsewhere leave it
// out: a re-run counts it once, as invalid, as the first pass did.
const waitingInvalid = `(l.state = 'retry' AND coalesce(l.last_error, '') = 'invalid_address')`

// notHandled is the anti-join on the ledger's business tuple, of kind $8,
// after the page's cursor $9 (NULL from the start), from the period $10.
// The cursor bounds the ledger's side too: it is implied by the join (both
// compare text in the same collation, so the bound is exactly implied by
// l.subscription_id = s.id::text), but PostgreSQL does not infer it, and
// without it a merge anti-join re-reads every ledger row before the cursor
// on every page (quadratic in the pass's size).
const notHandled = `NOT EXISTS (
        SELECT 1 FROM notice_ledger l
        WHERE ` + sameNotice + ` AND l.kind = $8
          AND ($9::text IS NULL OR l.subscription_id > $9::text)
          AND ` + fromPeriod + `)
  AND ($9::text IS NULL OR s.id::text > $9::text)`

// subscriptionListOpen: active subscriptions of one group whose window is
// open at now and that have no ledger row for this notice, in id order
// after a cursor. The window anchor-open <= now < anchor-close is passed
// as bounds on the kind's anchor (renews_at unless the kind names
// another): $3 = now+close (exclusive), $4 = now+open. The group
// parameters, then $8 kind, $9 cursor (NULL from the start), $10 the
// window's earliest period (NULL when unknown), $11 page size.
//
// The id keyset lets PostgreSQL walk the primary key and merge it with the
// ledger's business-tuple index, both bounded by the cursor: 0.75 ms a
// page of 1000 at 1M subscriptions. A (renews_at, id) keyset on the
// renews_at index was measured at 30-90 ms a page (a heap page per row,
// then a probe), 40x slower for a full window; for a sparse window the
// planner still picks the renews_at index and sorts. docs/BENCHMARKS.md.
const subscriptionListOpen = `SELECT {cols}
FROM {rel} s
WHERE ` + inGroup + `
  AND ` + notHandled + `
ORDER BY s.id::text
LIMIT $11`

// subscriptionListClosed: active subscriptions of one group whose window
// has closed while the charge (for a kind anchored elsewhere, its anchor:
// the trial's end, the price change) is still ahead, with no ledger row:
// the notices to record as missed. The parameters of
// subscriptionListOpen, with $3 = now, $4 = now+close, $7 false and $10
// the closed window's earliest period: the closed window
// holds the notices the last passes sent, each with its years of history.
const subscriptionListClosed = `SELECT {cols}
FROM {rel} s
WHERE ` + inGroup + `
  AND s.period_start IS NOT NULL
  AND ` + notHandled + `
ORDER BY s.id::text
LIMIT $11`

// subscriptionCountOpen: how many rows subscriptionListOpen returns over
// all its pages, without the rows with no renews_at it adds for counting:
// its parameters $1-$10, with $7 false, $9 NULL and $10 the rows'
// earliest period (CountOpen reads it first).
const subscriptionCountOpen = `SELECT count(*)
FROM {rel} s
WHERE ` + inGroup + `
  AND ` + notHandled

// subscriptionPeriodFrom: the earliest billing period of the rows of one
// group (the group parameters), NULL when there are none. The pass reads
// it once per window, open (for CountDue and ListOpen) and closed (for
// ListClosed), and passes it to their statements as a value ($10,
// fromPeriod), so that PostgreSQL prunes the ledger's past months when it
// plans them. As a sub-select inside subscriptionCountDue it pruned them
// only at run time, which PostgreSQL does not cost: over 10M past rows it
// chose a parallel hash join that took 3.9 s, against 0.2 s with the
// value.
const subscriptionPeriodFrom = `SELECT min(s.period_start::date)
FROM {rel} s
WHERE ` + inGroup

// subscriptionCountDue: in one walk of one group's window (the rows
// subscriptionListOpen considers), how many have no ledger row (open: what
// it would return), how many are due with a ledger row owned by another
// run (handled: what subscriptionCountHandled counts), and how many are
// due with a row waiting as invalid_address (waiting: left out of
// handled, whoever owns it). A nightly re-run that finds open = 0 skips
// the group's stream: it then costs one indexed anti-join, not a walk
// plus a count. The group parameters, then $8 kind, $9 this run's id,
// $10 the window's earliest period.
const subscriptionCountDue = `SELECT count(*) FILTER (WHERE l.subscription_id IS NULL) AS open,
       count(*) FILTER (WHERE l.subscription_id IS NOT NULL AND l.run_id <> $9
                          AND s.{anchor} > $3 AND s.{anchor} <= $4 AND NOT ` + waitingInvalid + `) AS handled,
       count(*) FILTER (WHERE l.subscription_id IS NOT NULL
                          AND s.{anchor} > $3 AND s.{anchor} <= $4 AND ` + waitingInvalid + `) AS waiting
FROM {rel} s
LEFT JOIN notice_ledger l
       ON ` + sameNotice + ` AND l.kind = $8
      AND ` + fromPeriod + `
WHERE ` + inGroup

// subscriptionCountHandled: due notices of one group that already have a
// ledger row owned by another run (claimed, sent, failed or retried
// elsewhere): the pass's "suppressed". The group parameters ($7 false),
// then $8 kind, $9 this run's id, $10 the group's earliest period (NULL
// when unknown; fromPeriod), which prunes the ledger's past months when
// the statement is planned: without it, PostgreSQL hash-joined every
// month's rows of the kind, 3.4 s over 1M past rows against 0.04 s with
// it (issue 39, docs/BENCHMARKS.md).
const subscriptionCountHandled = `SELECT count(*)
FROM {rel} s
WHERE ` + inGroup + `
  AND EXISTS (
        SELECT 1 FROM notice_ledger l
        WHERE ` + sameNotice + ` AND l.kind = $8
          AND l.run_id <> $9 AND NOT ` + waitingInvalid + `
          AND ` + fromPeriod + `)`

// subscriptionListRetry: the current rows of the retry rows'
// subscriptions (the ledger's retry rows), looked up by id, when in this shard,
// with their status (a row no longer active ends its retry as
// cancelled). $1 shards, $2 this shard, $3 ids (text[]).
const subscriptionListRetry = `SELECT {cols}, s.status::text AS status
FROM {rel} s
WHERE s.id::text = ANY($3::text[]) AND ` + shardOnly

// subscriptionGet: one subscription by id ($1), whatever its status, with
// the anchor of one kind, as the other statements read it (scan preview).
const subscriptionGet = `SELECT {cols}, s.status::text AS status
FROM {rel} s
WHERE s.id::text = $1`

// subscriptionSampleKeys: up to $3 ledger rows (any kind) of active
// subscriptions whose renews_at lies in ($1, $2]: notices of the current
// windows, claimed by this pass's recent predecessors, whose keys the
// secret should still derive. Found through the renews_at range and the
// business-tuple index, so its cost does not grow with the ledger's
// history (ordering the whole ledger by claimed_at did). At most $4
// (sampleProbes a key) subscriptions are looked up, so its cost does not
// grow with the number due either (joining all of them hashed every due
// row for a sample of 20: 150 ms of a 0.9 s re-run at 200k). Each
// subscription's rows are looked up by a LATERAL probe of the business
// key (its LIMIT keeps PostgreSQL from flattening it into a join), so the
// statement stops after $3 rows, and each probe reads only its period's
// month (pruned at run time by the probe's own period). As a join bounded
// by the sample's earliest period, PostgreSQL hashed the whole current
// month once the ledger had history: 58 ms at 20k due, growing with N,
// against 0.6 ms (issue 39).
const subscriptionSampleKeys = `WITH s AS MATERIALIZED (
      SELECT s.id, s.period_start, s.notice_revision
      FROM {rel} s
      WHERE s.status = 'active' AND s.renews_at > $1 AND s.renews_at <= $2
      LIMIT $4)
SELECT l.notice_key, l.subscription_id, l.kind, l.period_start, l.revision
FROM s
CROSS JOIN LATERAL (
    SELECT l.notice_key, l.subscription_id, l.kind, l.period_start, l.revision
    FROM notice_ledger l
    WHERE ` + sameNotice + `
    LIMIT $3) l
LIMIT $3`

// subscriptionColumns lists the columns of the source relation without
// reading a row: the start-up probe of which columns it has.
const subscriptionColumns = `SELECT * FROM {rel} LIMIT 0`

// selectList is the {cols} of the source statements: the required
// columns, the anchor (a quoted column) as anchor_at, and each optional
// column as text, or NULL where the relation lacks it.
const selectList = `s.id::text AS id, s.email::text AS email, s.renews_at, s.period_start::date AS period_start,
       s.jurisdiction::text AS jurisdiction, COALESCE(s.notice_revision, 0)::int AS revision,
       s.{anchor} AS anchor_at`

// subscriptionListFallback: the active rows of one group (the group
// parameters, $7 false) with the window open (as subscriptionListOpen's
// $3, $4), of kind $8, whose email row is absent or carried on (the
// ledger's rule, ledger.CarriedOnSQL: failed, or undeliverable by
// evidence, or, with the kind's confirm_within $14 (an interval, NULL for
// none), sent at least that long before $13 (now) and not confirmed
// delivered) and whose sms row is absent or retry (its key as
// notice_key), after the cursor $9, from the period $10 (NULL: every
// month), at most $11, restricted to the subscription ids $12 (NULL:
// every row). A var only because the ledger's rule is a function of the
// alias: it is fixed at start-up like the constants.
var subscriptionListFallback = `SELECT {cols}, e.state::text AS email_state, m.notice_key
FROM {rel} s
LEFT JOIN notice_ledger e
       ON e.subscription_id = s.id::text AND e.period_start = s.period_start::date
      AND e.revision = COALESCE(s.notice_revision, 0) AND e.kind = $8 AND e.channel = 'email'
      AND ($10::date IS NULL OR e.period_start >= $10::date)
LEFT JOIN notice_ledger m
       ON m.subscription_id = s.id::text AND m.period_start = s.period_start::date
      AND m.revision = COALESCE(s.notice_revision, 0) AND m.kind = $8 AND m.channel = 'sms'
      AND ($10::date IS NULL OR m.period_start >= $10::date)
WHERE ` + inGroup + `
  AND (e.subscription_id IS NULL OR ` + ledger.CarriedOnSQL("e", "$13", "$14") + `)
  AND (m.subscription_id IS NULL OR m.state = 'retry')
  AND ($9::text IS NULL OR s.id::text > $9::text)
  AND ($12::text[] IS NULL OR s.id::text = ANY($12::text[]))
ORDER BY s.id::text
LIMIT $11`

// subscriptionListClosedSMS: the active rows of one group of a kind that
// goes by sms first (the group parameters, $7 false) whose window closed
// (as subscriptionListClosed's $3, $4) with no sms row of kind $8, after
// the cursor $9, at most $11 ($10 unused: NULL).
const subscriptionListClosedSMS = `SELECT {cols}
FROM {rel} s
WHERE ` + inGroup + `
  AND s.period_start IS NOT NULL
  AND NOT EXISTS (
        SELECT 1 FROM notice_ledger m
        WHERE m.subscription_id = s.id::text AND m.period_start = s.period_start::date
          AND m.revision = COALESCE(s.notice_revision, 0) AND m.kind = $8 AND m.channel = 'sms')
  AND ($9::text IS NULL OR s.id::text > $9::text)
  AND ($10::date IS NULL OR s.period_start::date >= $10::date)
ORDER BY s.id::text
LIMIT $11`
