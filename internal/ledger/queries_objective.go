package ledger

// noticeObjectiveByPeriod counts, for each trailing period (names $2,
// lengths in seconds $3, text[] and float8[]), the notices whose window
// closed within it (window_closes_at in (now - length, now], $1 now) and
// how many of those reached the customer before their window closed. A
// notice is its business tuple: every channel's row together, so one
// whose email bounced and whose sms was delivered is reached (carried to
// a delivered channel). Per notice:
//   - due: one per tuple with a row whose window closed in the period;
//   - delivered: some row has evidence of kind 'delivered' that occurred
//     (else was recorded) at or before that row's window closed;
//   - accepted: some row is in state sent, sent at or before its window
//     closed (confirmed or not);
//   - reached: delivered, or accepted by email when $4 is false (the email
//     sender cannot report delivery: outbox, http, smtp with provider
//     none), so its acceptance is the best evidence there will ever be.
//     An sms row counts only when delivered (Twilio reports delivery).
//
// $5 is the longest period's length: the one range of
// notice_ledger_window_closes_brin (sql/0038) the statement reads. The
// delivered evidence of those rows is read once, by the range of their
// billing periods (notice_evidence_period) and hashed by key, rather than
// probed row by row (EXPLAIN on a generated ledger: docs/delivery.md,
// "What it costs").
const noticeObjectiveByPeriod = `
WITH row_ AS MATERIALIZED (
    SELECT l.notice_key, l.subscription_id, l.kind, l.period_start, l.revision, l.channel,
           l.window_closes_at,
           (l.state = 'sent' AND l.sent_at <= l.window_closes_at) AS accepted
    FROM notice_ledger l
    WHERE l.window_closes_at > $1::timestamptz - make_interval(secs => $5::float8)
      AND l.window_closes_at <= $1::timestamptz),
delivered AS (
    SELECT e.notice_key, min(COALESCE(e.occurred_at, e.recorded_at)) AS at
    FROM notice_evidence e
    WHERE e.kind = 'delivered'
      AND e.period_start >= (SELECT min(period_start) FROM row_)
      AND e.period_start <= (SELECT max(period_start) FROM row_)
    GROUP BY e.notice_key),
closed AS (
    SELECT min(r.window_closes_at) AS closes_at,
           bool_or(r.accepted) AS accepted,
           COALESCE(bool_or(d.at <= r.window_closes_at), false) AS delivered,
           COALESCE(bool_or(d.at <= r.window_closes_at), false)
             OR bool_or(r.accepted AND r.channel = 'email' AND NOT $4::boolean) AS reached
    FROM row_ r LEFT JOIN delivered d ON d.notice_key = r.notice_key
    GROUP BY r.subscription_id, r.kind, r.period_start, r.revision)
SELECT p.period,
       count(c.closes_at)::int AS due,
       count(*) FILTER (WHERE c.reached)::int AS reached,
       count(*) FILTER (WHERE c.delivered)::int AS delivered,
       count(*) FILTER (WHERE c.accepted)::int AS accepted
FROM unnest($2::text[], $3::float8[]) AS p(period, secs)
LEFT JOIN closed c ON c.closes_at > $1::timestamptz - make_interval(secs => p.secs)
GROUP BY p.period, p.secs
ORDER BY p.secs`
