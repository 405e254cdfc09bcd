package send

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"scan/internal/fifo"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"scan/internal/clock"
	"scan/internal/pace"
)

// Defaults for DispatcherConfig and RetryPolicy.
const (
	DefaultConcurrency = 16
	DefaultMaxQueued   = 10000
	DefaultAttempts    = 3
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = 30 * time.Second
)

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("send: dispatcher closed")

// RetryPolicy says how a Dispatcher retries Transient failures within its
// run. Permanent and Unknown failures, render failures and ErrMisconfigured
// are never retried.
type RetryPolicy struct {
	// Attempts is the most sends of one notice, the first included.
	// Default DefaultAttempts; 1 disables retries.
	Attempts int
	// Backoff is the wait before the second attempt; it doubles for each
	// further attempt. Default DefaultBackoff.
	Backoff time.Duration
	// MaxBackoff caps the wait. Default DefaultMaxBackoff.
	MaxBackoff time.Duration
}

// DispatcherConfig configures a Dispatcher. Every field but Sender and
// Renderer has a usable zero value, said below; a negative number is
// refused, never taken as its default.
type DispatcherConfig struct {
	// Sender hands messages to the provider. Required.
	Sender Sender
	// Renderer turns each notice into its message, in the workers.
	// Required (internal/message's *Renderer is one).
	Renderer Renderer
	// Limits are the token buckets that pace sends. The zero Limits (and
	// any zero Bucket in it) does not limit; NewDispatcher refuses a
	// bucket that Bucket.Check(false) refuses.
	Limits pace.Limits
	// Concurrency is the most sends in flight. Default DefaultConcurrency.
	Concurrency int
	// MaxQueued is the most accepted notices without a delivered Result;
	// Submit blocks beyond it. Default DefaultMaxQueued.
	MaxQueued int
	// Retry says how Transient failures are retried; each zero field
	// takes its default (see RetryPolicy).
	Retry RetryPolicy
	// Clock gives the scheduler the time and its wake-up timer: every
	// reading of the time (when a notice was queued, handed out, answered;
	// when a bucket has its next token) and the timer on which it waits
	// for the earliest bucket to refill. The token buckets take the time
	// as a parameter, so they follow the Clock too. A nil Clock is
	// clock.System; tests drive a Dispatcher with a fake one
	// (internal/send/sendtest). Result.Started, Done and Waited are read
	// from it.
	Clock clock.Clock
	// Budget, when set, paces the domains it says it paces with slots
	// leased from buckets shared with other processes (see Budget), on
	// top of Limits. Nil paces by Limits alone, in this process.
	Budget Budget
	// Keep, when set, is called by the worker that sent a notice, once,
	// after its first attempt, with the exact message handed over
	// (Message.Raw); what it returns is Result.Kept. The workers run
	// concurrently and mostly wait on the provider, so what Keep costs
	// (internal/ledger's KeepMessage compresses it as proof of notice)
	// stays off the caller's serial path. An error keeps nothing.
	Keep func(raw []byte) ([]byte, error)
}

// Result is the outcome of one accepted notice.
type Result struct {
	Notice    Notice
	MessageID string  // the Message-ID the notice has (or would have had)
	Receipt   Receipt // the provider's receipt when Err is nil
	// Err is nil when the provider accepted the message, else an *Error:
	// use Classify. A notice never handed to the Sender because the run
	// was cancelled has a Transient Err wrapping ErrNotAttempted.
	Err error
	// Attempts is how many times the notice was handed to the Sender.
	Attempts int
	// Waited is the time the notice spent queued for its buckets and a
	// free worker, summed over its attempts (retry backoff excluded).
	Waited time.Duration
	// Started is when the notice was first handed to a worker to send;
	// zero when it never was.
	Started time.Time
	// Done is when the outcome was known.
	Done time.Time
	// Digest is the SHA-256 of Message.Raw, the exact message handed to
	// the Sender (the raw content SES gets, the MIME SMTP and the outbox
	// get); nil when the notice never was (Attempts == 0).
	Digest []byte
	// Raw is that message itself (Message.Raw), kept as proof of notice
	// with the outcome; nil when Digest is.
	Raw []byte
	// Kept is what DispatcherConfig.Keep made of Raw; nil without Keep,
	// when it failed, or when Raw is nil.
	Kept []byte
}

// Dispatcher renders and sends notices through a Sender with a bounded
// number of workers, pacing each recipient domain with its own token bucket
// and all sends with a global one, and retrying Transient failures.
//
// A domain whose bucket is empty never holds back the others: notices wait
// in one queue per domain, and a single scheduler hands a worker the next
// notice whose domain bucket and the global bucket both have a token, waking
// on a timer for the earliest domain to refill. No worker ever blocks on a
// limiter. A pass over domains A and B so finishes in about the longer of
// their two paces, not their sum.
//
// The caller Submits notices, reads Results concurrently (a Dispatcher
// whose Results are not drained stops accepting once MaxQueued results are
// pending), and calls Close after the last Submit. Every notice Submit
// accepted yields exactly one Result; then Results is closed.
//
// A Dispatcher is safe for concurrent use.
type Dispatcher struct {
	sender   Sender
	renderer Renderer
	retry    RetryPolicy
	workers  int
	handout  int // notices handed out to workers at most
	limits   pace.Limits
	global   *rate.Limiter
	clock    clock.Clock
	budget   Budget
	keep     func([]byte) ([]byte, error)
	leased   chan leaseReply // one lease in flight at most

	ctx     context.Context // the run: cancelled means shut down
	sendCtx context.Context // ctx without its cancellation, for in-flight sends

	slots   chan struct{} // one per accepted notice without a delivered Result
	results chan Result
	work    chan *job
	done    chan *job
	wake    chan struct{}
	closing chan struct{}
	wg      sync.WaitGroup

	mu     sync.Mutex
	intake []*job
	closed bool
	// free are jobs whose Result is queued, for Submit to reuse: in
	// steady state a notice costs the dispatcher no allocation of its
	// own. The scheduler hands them over in take.
	free []*job

	// Owned by the scheduler goroutine.
	domains   map[string]*bucketQueue
	ready     bucketHeap         // domains with queued notices, by when they may send
	delayed   retryHeap          // notices waiting out a retry backoff
	out       fifo.Queue[Result] // results not yet delivered
	freed     []*job             // finished jobs, handed to free at the next take
	taken     []*job             // the intake's buffer before the last take: its next one
	inFlight  int
	queued    int
	globalAt  time.Time             // the global bucket has no token before this
	wanting   map[*bucketQueue]bool // paced domains with more notices than slots
	leasing   bool                  // a lease is in flight
	handed    int                   // notices handed out to workers
	handRate  pace.Rate             // notices handed out a second (DefaultRateWindow)
	cancelled bool
	drained   bool // closed was seen with an empty intake
	seq       uint64
}

// job is one accepted notice.
type job struct {
	n          Notice
	domain     string
	msg        *Message
	attempts   int
	waited     time.Duration
	enqueuedAt time.Time
	started    time.Time
	retryAt    time.Time
	receipt    Receipt
	err        error
	kept       []byte // DispatcherConfig.Keep's, after the first attempt
	index      int    // in retryHeap
}

// NewDispatcher validates cfg, fills its defaults and starts the
// dispatcher's goroutines, which live until Close and the delivery of the
// last Result.
//
// ctx is the run: when it is cancelled, notices not yet handed to the
// Sender, and those waiting to retry, come back at once (ErrNotAttempted,
// or their last Transient error); a send already in flight continues,
// bounded by the Sender's own timeout, so that its outcome is known.
// Submit keeps accepting after cancellation and answers each notice with
// ErrNotAttempted.
func NewDispatcher(ctx context.Context, cfg DispatcherConfig) (*Dispatcher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := newDispatcher(ctx, cfg.withDefaults())
	d.start()
	return d, nil
}

// validate refuses what no default can mend: a missing Sender or
// Renderer, a negative field, a bucket that is not one.
func (c DispatcherConfig) validate() error {
	switch {
	case c.Sender == nil:
		return errors.New("send: DispatcherConfig.Sender is nil")
	case c.Renderer == nil:
		return errors.New("send: DispatcherConfig.Renderer is nil")
	case c.Concurrency < 0:
		return fmt.Errorf("send: DispatcherConfig.Concurrency %d is negative", c.Concurrency)
	case c.MaxQueued < 0:
		return fmt.Errorf("send: DispatcherConfig.MaxQueued %d is negative", c.MaxQueued)
	case c.Retry.Attempts < 0 || c.Retry.Backoff < 0 || c.Retry.MaxBackoff < 0:
		return errors.New("send: DispatcherConfig.Retry has a negative field")
	}
	check := func(field string, b pace.Bucket) error {
		if err := b.Check(false); err != nil {
			return fmt.Errorf("send: DispatcherConfig.Limits.%s.%w", field, err)
		}
		return nil
	}
	if err := check("Default", c.Limits.Default); err != nil {
		return err
	}
	if err := check("Global", c.Limits.Global); err != nil {
		return err
	}
	for name, b := range c.Limits.Domains {
		if err := check("Domains["+name+"]", b); err != nil {
			return err
		}
	}
	return nil
}

// withDefaults returns c, which validate accepted, with every zero field
// that has a default set to it and Limits.Domains keyed in lower case (a
// copy: the caller's map is left alone).
func (c DispatcherConfig) withDefaults() DispatcherConfig {
	orDefault(&c.Concurrency, DefaultConcurrency)
	orDefault(&c.MaxQueued, DefaultMaxQueued)
	orDefault(&c.Retry.Attempts, DefaultAttempts)
	orDefault(&c.Retry.Backoff, DefaultBackoff)
	orDefault(&c.Retry.MaxBackoff, DefaultMaxBackoff)
	domains := make(map[string]pace.Bucket, len(c.Limits.Domains))
	for name, b := range c.Limits.Domains {
		domains[strings.ToLower(name)] = b
	}
	c.Limits.Domains = domains
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	return c
}

// orDefault sets *v to def when *v is its zero value.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// newDispatcher builds the Dispatcher of cfg, which withDefaults filled,
// without starting it.
func newDispatcher(ctx context.Context, cfg DispatcherConfig) *Dispatcher {
	// A worker on a Pipeliner holds the notice it sends and the one it
	// announced; one more each waits in the work queue, so that a worker
	// finds its next successor there at once rather than after the
	// scheduler's turn.
	handout := cfg.Concurrency
	if _, ok := pipelinerOf(cfg.Sender); ok {
		handout = 3 * cfg.Concurrency
	}
	return &Dispatcher{
		sender:   cfg.Sender,
		renderer: cfg.Renderer,
		keep:     cfg.Keep,
		retry:    cfg.Retry,
		workers:  cfg.Concurrency,
		handout:  handout,
		limits:   cfg.Limits,
		global:   newLimiter(cfg.Limits.Global),
		clock:    cfg.Clock,
		ctx:      ctx,
		sendCtx:  context.WithoutCancel(ctx),
		slots:    make(chan struct{}, cfg.MaxQueued),
		results:  make(chan Result),
		work:     make(chan *job, handout),
		done:     make(chan *job),
		wake:     make(chan struct{}, 1),
		closing:  make(chan struct{}),
		domains:  map[string]*bucketQueue{},
		budget:   cfg.Budget,
		leased:   make(chan leaseReply, 1),
		wanting:  map[*bucketQueue]bool{},
	}
}

// start runs the workers and the scheduler.
func (d *Dispatcher) start() {
	d.wg.Add(d.workers)
	for range d.workers {
		go d.worker()
	}
	go d.schedule()
}

// Submit queues n for sending. It blocks while MaxQueued notices are
// pending and returns ctx's error if ctx ends first, or ErrClosed after
// Close; in both cases n was not accepted and yields no Result. A nil
// return means n will yield exactly one Result.
func (d *Dispatcher) Submit(ctx context.Context, n Notice) error {
	select {
	case <-d.closing:
		return ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.closing:
		return ErrClosed
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		<-d.slots
		return ErrClosed
	}
	var j *job
	if k := len(d.free); k > 0 {
		j, d.free = d.free[k-1], d.free[:k-1]
	} else {
		j = new(job)
	}
	*j = job{n: n, domain: DomainOf(n)}
	d.intake = append(d.intake, j)
	d.mu.Unlock()
	d.signal()
	return nil
}

// DomainOf returns the notice's bucket key: Domain, else the part of To
// after its last "@", lower-cased.
func DomainOf(n Notice) string {
	if n.Domain != "" {
		return strings.ToLower(n.Domain)
	}
	return strings.ToLower(n.To[strings.LastIndexByte(n.To, '@')+1:])
}

// Results returns the channel on which each accepted notice's Result
// arrives, in completion order. It is closed after Close, once every
// accepted notice has its Result.
func (d *Dispatcher) Results() <-chan Result { return d.results }

// Close stops Submit from accepting notices. It does not wait: Results is
// closed when the last Result has been delivered. Close does not close the
// Sender. Calling Close more than once does nothing.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.closing)
	}
	d.mu.Unlock()
	d.signal()
}

func (d *Dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// worker renders (once) and sends the notices the scheduler hands it. With
// a Pipeliner, a worker sending one notice takes the next if one is
// already waiting, so that its envelope travels with this one's end.
// Waiting notices go to idle workers first: a receive that does not block
// finds one only when no worker is waiting for it.
func (d *Dispatcher) worker() {
	defer d.wg.Done()
	p, ok := pipelinerOf(d.sender)
	if !ok {
		for j := range d.work {
			if d.prepare(j) {
				d.attempt(j, func(m *Message) (Receipt, error) { return d.sender.Send(d.sendCtx, m) })
			}
			d.done <- j
		}
		return
	}
	lane := p.Lane()
	defer lane.Close()
	var next *job
	for {
		j := next
		next = nil
		if j == nil {
			var ok bool
			if j, ok = <-d.work; !ok {
				return
			}
		}
		if !d.prepare(j) {
			d.done <- j
			continue
		}
		select {
		case n, ok := <-d.work:
			switch {
			case !ok:
			case d.prepare(n):
				next = n
			default:
				d.done <- n
			}
		default:
		}
		var nm *Message
		if next != nil {
			nm = next.msg
		}
		d.attempt(j, func(m *Message) (Receipt, error) { return lane.Send(d.sendCtx, m, nm) })
		d.done <- j
	}
}

// prepare readies j for its attempt: it renders j if it is not yet, and
// refuses once the run is cancelled. False means j has its outcome.
func (d *Dispatcher) prepare(j *job) (ok bool) {
	if d.ctx.Err() != nil {
		if j.err == nil {
			j.err = &Error{Class: Transient, Err: ErrNotAttempted}
		}
		return false
	}
	if j.msg != nil {
		return true
	}
	defer func() {
		if p := recover(); p != nil {
			j.err = &Error{Class: Permanent, Err: fmt.Errorf("panic: %v", p)}
			ok = false
		}
	}()
	m, err := d.renderer.Render(j.n)
	if err != nil {
		j.err = &Error{Class: Permanent, Err: err}
		return false
	}
	j.msg = m
	return true
}

// attempt sends j's message once. A panic becomes an Unknown error, so
// that the notice still gets its one Result.
func (d *Dispatcher) attempt(j *job, send func(*Message) (Receipt, error)) {
	defer func() {
		if p := recover(); p != nil {
			j.err = &Error{Class: Unknown, Err: fmt.Errorf("panic: %v", p)}
		}
	}()
	j.attempts++
	j.receipt, j.err = send(j.msg)
	if j.kept == nil && d.keep != nil {
		j.kept = d.keepOf(j.msg.Raw)
	}
}

// keepOf is Keep's of raw; nil when it fails or panics, which must not
// change the outcome of a send already made.
func (d *Dispatcher) keepOf(raw []byte) (kept []byte) {
	defer func() {
		if recover() != nil {
			kept = nil
		}
	}()
	kept, err := d.keep(raw)
	if err != nil {
		return nil
	}
	return kept
}

// schedule is the single goroutine that owns the queues and buckets.
func (d *Dispatcher) schedule() {
	defer func() {
		close(d.work)
		d.wg.Wait()
		close(d.results)
	}()
	timer := d.clock.NewTimer(time.Hour)
	timer.Stop()
	ctxDone := d.ctx.Done()
	for {
		now := d.clock.Now()
		if !d.cancelled && d.ctx.Err() != nil {
			d.cancel(now)
			ctxDone = nil
		}
		d.promote(now)
		d.dispatch(now)
		d.lease(now)
		if d.drained && d.queued == 0 && d.inFlight == 0 && d.delayed.Len() == 0 && d.out.Len() == 0 && !d.leasing {
			return
		}
		var timerC <-chan time.Time
		if at := d.nextWake(); !at.IsZero() {
			timer.Reset(at.Sub(now))
			timerC = timer.C()
		}
		var out chan<- Result
		var head Result
		if d.out.Len() > 0 {
			out, head = d.results, *d.out.Front()
		}
		select {
		case <-timerC:
		case <-d.wake:
			d.take(d.clock.Now())
		case j := <-d.done:
			d.inFlight--
			d.complete(j, d.clock.Now())
		case out <- head:
			d.out.Pop()
			<-d.slots
		case r := <-d.leased:
			d.granted(r, d.clock.Now())
		case <-ctxDone:
			ctxDone = nil
			d.cancel(d.clock.Now())
		}
		timer.Stop()
	}
}

// take moves submitted notices into their domain queues.
func (d *Dispatcher) take(now time.Time) {
	d.mu.Lock()
	in := d.intake
	d.intake = d.taken[:0]
	d.free = append(d.free, d.freed...)
	if d.closed {
		d.drained = true
	}
	d.mu.Unlock()
	clear(d.freed)
	d.freed = d.freed[:0]
	defer func() {
		clear(in)
		d.taken = in
	}()
	for _, j := range in {
		if d.cancelled {
			d.finish(j, now, &Error{Class: Transient, Err: ErrNotAttempted})
			continue
		}
		d.enqueue(j, now)
	}
}

func (d *Dispatcher) enqueue(j *job, now time.Time) {
	dq := d.domains[j.domain]
	if dq == nil {
		dq = &bucketQueue{name: j.domain, lim: newLimiter(d.limits.For(j.domain)), index: -1}
		dq.paced = d.budget != nil && d.budget.Paced(j.domain)
		d.domains[j.domain] = dq
	}
	j.enqueuedAt = now
	dq.jobs = append(dq.jobs, j)
	d.queued++
	d.want(dq)
	if dq.index < 0 {
		d.requeue(dq, now)
	}
}

// requeue puts dq, which has notices and is not in the ready heap, back in
// it behind every domain already waiting, unless it is paced and has no
// slot: then it waits for a lease (wanting) outside the heap.
func (d *Dispatcher) requeue(dq *bucketQueue, now time.Time) {
	if dq.paced && !d.hasSlot(dq, now) {
		return
	}
	dq.readyAt = now.Add(delay(dq.lim, now))
	if dq.paced && dq.slots[0].at.After(dq.readyAt) {
		dq.readyAt = dq.slots[0].at
	}
	d.seq++
	dq.seq = d.seq
	heap.Push(&d.ready, dq)
}

// dispatch hands workers every notice that its domain bucket and the global
// bucket allow now.
func (d *Dispatcher) dispatch(now time.Time) {
	for d.inFlight < d.handout && d.ready.Len() > 0 {
		dq := d.ready[0]
		if dq.readyAt.After(now) {
			return
		}
		if dq.paced && !d.hasSlot(dq, now) {
			heap.Pop(&d.ready) // waits for a lease (wanting)
			continue
		}
		if dq.paced && dq.slots[0].at.After(now) {
			dq.readyAt = dq.slots[0].at
			heap.Fix(&d.ready, 0)
			continue
		}
		if w := delay(d.global, now); w > 0 {
			d.globalAt = now.Add(w)
			return
		}
		if !dq.lim.AllowN(now, 1) {
			dq.readyAt = now.Add(max(delay(dq.lim, now), time.Microsecond))
			heap.Fix(&d.ready, 0)
			continue
		}
		d.global.AllowN(now, 1)
		if dq.paced {
			dq.slots = dq.slots[1:]
		}
		j := dq.jobs[0]
		dq.jobs[0] = nil
		dq.jobs = dq.jobs[1:]
		d.queued--
		j.waited += now.Sub(j.enqueuedAt)
		if j.started.IsZero() {
			j.started = now
		}
		d.inFlight++
		d.handed++
		d.work <- j // buffered for every notice handed out: never blocks
		// Behind every domain already waiting, if it has more.
		heap.Pop(&d.ready)
		if len(dq.jobs) == 0 {
			dq.jobs = nil
			continue
		}
		d.requeue(dq, now)
	}
}

// promote moves notices whose retry backoff is over back into their
// domain queues.
func (d *Dispatcher) promote(now time.Time) {
	for d.delayed.Len() > 0 && !d.delayed[0].retryAt.After(now) {
		d.enqueue(heap.Pop(&d.delayed).(*job), now)
	}
}

// nextWake returns when the scheduler has something to do without being
// told, or the zero time.
func (d *Dispatcher) nextWake() time.Time {
	var at time.Time
	if d.inFlight < d.handout && d.ready.Len() > 0 {
		at = d.ready[0].readyAt
		if d.globalAt.After(at) {
			at = d.globalAt
		}
	}
	if d.delayed.Len() > 0 {
		if r := d.delayed[0].retryAt; at.IsZero() || r.Before(at) {
			at = r
		}
	}
	if !d.leasing {
		for dq := range d.wanting {
			if !dq.askAt.IsZero() && (at.IsZero() || dq.askAt.Before(at)) {
				at = dq.askAt
			}
		}
	}
	return at
}

// complete takes a worker's outcome: a Result, or another attempt later.
func (d *Dispatcher) complete(j *job, now time.Time) {
	if j.err == nil {
		d.finish(j, now, nil)
		return
	}
	var se *Error
	if !errors.As(j.err, &se) {
		j.err = &Error{Class: Unknown, Err: j.err}
	}
	if d.cancelled || j.msg == nil || Classify(j.err) != Transient ||
		errors.Is(j.err, ErrMisconfigured) || j.attempts >= d.retry.Attempts {
		d.finish(j, now, j.err)
		return
	}
	backoff := d.retry.Backoff << (j.attempts - 1)
	if backoff > d.retry.MaxBackoff || backoff <= 0 {
		backoff = d.retry.MaxBackoff
	}
	j.retryAt = now.Add(backoff)
	heap.Push(&d.delayed, j)
}

// cancel answers every notice not in flight: the run is over.
func (d *Dispatcher) cancel(now time.Time) {
	d.cancelled = true
	for d.ready.Len() > 0 {
		dq := heap.Pop(&d.ready).(*bucketQueue)
		for _, j := range dq.jobs {
			d.queued--
			d.finish(j, now, &Error{Class: Transient, Err: ErrNotAttempted})
		}
		dq.jobs = nil
	}
	for d.delayed.Len() > 0 {
		j := heap.Pop(&d.delayed).(*job)
		d.finish(j, now, j.err) // its last Transient error
	}
	for dq := range d.wanting {
		delete(d.wanting, dq)
		for _, j := range dq.jobs { // a paced domain waiting for slots
			d.queued--
			d.finish(j, now, &Error{Class: Transient, Err: ErrNotAttempted})
		}
		dq.jobs = nil
	}
}

// finish queues j's Result for delivery. The dispatcher logs nothing: the
// caller that records the Result logs it (internal/scan's recorder).
func (d *Dispatcher) finish(j *job, now time.Time, err error) {
	r := Result{
		Notice:   j.n,
		Err:      err,
		Attempts: j.attempts,
		Waited:   j.waited,
		Started:  j.started,
		Done:     now,
	}
	if j.msg != nil {
		r.MessageID = j.msg.MessageID
		if j.attempts > 0 {
			sum := sha256.Sum256(j.msg.Raw)
			r.Digest, r.Raw, r.Kept = sum[:], j.msg.Raw, j.kept
		}
	} else {
		r.MessageID = d.renderer.MessageID(j.n.Key)
	}
	if err == nil {
		r.Receipt = j.receipt
	}
	d.out.Push(r)
	*j = job{}
	d.freed = append(d.freed, j)
}

// bucketQueue is one recipient domain's bucket and waiting notices.
type bucketQueue struct {
	name    string
	paced   bool   // its sends take slots from the Budget
	slots   []slot // granted and unused, ascending
	askAt   time.Time
	lim     *rate.Limiter
	jobs    []*job
	readyAt time.Time // its bucket has a token for the head from then
	seq     uint64    // order among domains ready at the same time
	index   int       // in bucketHeap; -1 when not queued
}

// bucketHeap orders domains with waiting notices by readyAt, then by seq,
// so that domains ready together take turns.
type bucketHeap []*bucketQueue

func (h bucketHeap) Len() int { return len(h) }
func (h bucketHeap) Less(i, j int) bool {
	if !h[i].readyAt.Equal(h[j].readyAt) {
		return h[i].readyAt.Before(h[j].readyAt)
	}
	return h[i].seq < h[j].seq
}
func (h bucketHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *bucketHeap) Push(x any) {
	dq := x.(*bucketQueue)
	dq.index = len(*h)
	*h = append(*h, dq)
}
func (h *bucketHeap) Pop() any {
	old := *h
	dq := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	dq.index = -1
	return dq
}

// retryHeap orders notices waiting to retry by retryAt.
type retryHeap []*job

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].retryAt.Before(h[j].retryAt) }
func (h retryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *retryHeap) Push(x any) {
	j := x.(*job)
	j.index = len(*h)
	*h = append(*h, j)
}
func (h *retryHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return j
}
