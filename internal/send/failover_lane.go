package send

import "context"

// A Failover is a Pipeliner: a worker's lane sends through a lane of the
// current sender when that sender is a Pipeliner (SMTP), so a list such
// as SCAN_SENDER=smtp,http keeps SMTP's pipelining, and through its Send
// otherwise. What moves to the next sender, and when, is Send's rule
// (deliver), message by message.
var _ Pipeliner = (*Failover)(nil)

// Lane returns a lane over f's current sender.
func (f *Failover) Lane() Lane { return &failoverLane{f: f, i: -1} }

// failoverLane is one worker's lane through a Failover. It holds a lane of
// one sender at a time, senders[i]'s; lane is nil when that sender is not
// a Pipeliner.
//
// When the Failover has moved past i (on this worker's failure or
// another's), the next Send closes the old lane first: an envelope it
// announced behind the last message is abandoned with its connection,
// and nothing of that message's content had left (Lane's contract), so
// the message goes through the new sender as a single Send's would.
type failoverLane struct {
	f    *Failover
	i    int // index of the sender lane belongs to; -1 before the first Send
	lane Lane
}

// Send delivers m with the outcomes and failover rule of Failover.Send,
// announcing next to the current sender's lane when it has one. A message
// retried on the next sender announces next there.
func (l *failoverLane) Send(ctx context.Context, m, next *Message) (Receipt, error) {
	return l.f.deliver(ctx, func(i int) (Receipt, error) {
		if i != l.i {
			l.Close()
			l.i = i
			if p, ok := l.f.senders[i].Sender.(Pipeliner); ok {
				l.lane = p.Lane()
			}
		}
		if l.lane == nil {
			return l.f.senders[i].Sender.Send(ctx, m)
		}
		return l.lane.Send(ctx, m, next)
	})
}

// Close releases the sender's lane. Calling it more than once does nothing.
func (l *failoverLane) Close() {
	if l.lane != nil {
		l.lane.Close()
		l.lane = nil
	}
	l.i = -1
}

// pipelinerOf returns s as the Pipeliner whose lanes the Dispatcher gives
// its workers (each worker then holds a second notice while it sends), and
// false when s is not one, or is a Failover none of whose senders
// pipelines (ses,http): such a list is sent notice by notice, as each of
// its senders alone would be.
func pipelinerOf(s Sender) (Pipeliner, bool) {
	if f, ok := s.(*Failover); ok {
		for _, n := range f.senders {
			if _, ok := n.Sender.(Pipeliner); ok {
				return f, true
			}
		}
		return nil, false
	}
	p, ok := s.(Pipeliner)
	return p, ok
}
