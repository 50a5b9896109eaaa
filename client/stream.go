package client

import (
	"context"
	"iter"
)

// chunk is one partition's records from one fetch.
type chunk struct {
	gen  uint64
	ps   *partitionState
	msgs []*Message
}

// Stream is one of the message streams of CreateMessageStreams: it yields
// the messages of the partitions assigned to it, in offset order per
// partition, blocking while none are available, and ends only when the
// consumer closes. Its partitions change with rebalances.
//
// A message counts as handled, and may be committed, once the loop body it
// was handed to returns. Iterate a Stream from one goroutine at a time.
type Stream struct {
	g     *GroupConsumer
	topic string
	index int
	ch    chan chunk
	errs  chan error
	// rest is the unread tail of the chunk a loop broke out of; only the
	// iterating goroutine touches it. A rebalance need not clear it: its
	// generation is then stale and deliver drops it.
	rest chunk
}

func newStream(g *GroupConsumer, topic string, index int) *Stream {
	return &Stream{
		g:     g,
		topic: topic,
		index: index,
		ch:    make(chan chunk, g.cfg.queuedChunks()),
		errs:  make(chan error, 1),
	}
}

// Topic is the stream's topic.
func (s *Stream) Topic() string { return s.topic }

// Index is the stream's position among its topic's streams.
func (s *Stream) Index() int { return s.index }

// All yields messages, and errors the application should know of (a
// rebalance that failed; the consumer keeps trying), until the consumer
// closes or ctx ends (then it yields ctx's error last).
func (s *Stream) All(ctx context.Context) iter.Seq2[*Message, error] {
	return func(yield func(*Message, error) bool) {
		for {
			c := s.rest
			s.rest = chunk{}
			if len(c.msgs) == 0 {
				select {
				case c = <-s.ch:
				case err := <-s.errs:
					if !yield(nil, err) {
						return
					}
					continue
				case <-s.g.closed:
					return
				case <-ctx.Done():
					yield(nil, ctx.Err())
					return
				}
			}
			for i, m := range c.msgs {
				cont, fresh := s.deliver(c, m, yield)
				if !fresh {
					break // the rest of a stale chunk is stale too
				}
				if !cont {
					// The next iteration starts here: dropping the tail
					// would let later offsets be handled, and committed,
					// past messages nobody saw.
					s.rest = chunk{gen: c.gen, ps: c.ps, msgs: c.msgs[i+1:]}
					return
				}
			}
		}
	}
}

// Messages yields messages until the consumer closes; errors are logged by
// the consumer and not shown here.
func (s *Stream) Messages() iter.Seq[*Message] {
	return func(yield func(*Message) bool) {
		for m, err := range s.All(context.Background()) {
			if err != nil {
				continue
			}
			if !yield(m) {
				return
			}
		}
	}
}

// deliver hands m to the loop body unless its generation has ended, and
// marks it handled once the body returns. The in-flight count lets a
// rebalance wait for the body before committing.
func (s *Stream) deliver(c chunk, m *Message, yield func(*Message, error) bool) (cont, fresh bool) {
	g := s.g
	g.inflight.Add(1)
	defer g.inflight.Add(-1)
	if g.gen.Load() != c.gen {
		return true, false
	}
	if g.cfg.ManualMark {
		// The application marks m itself (MarkHandled) once it is done.
		c.ps.delivered.Store(m.Offset + 1)
		return yield(m, nil), true
	}
	handled := false
	defer func() {
		// Also when the body breaks out of the loop: it did handle m. Not
		// when it panics: m is then not handled.
		if handled {
			c.ps.consumed.Store(m.Offset + 1)
		}
	}()
	cont = yield(m, nil)
	handled = true
	return cont, true
}

// drain drops queued chunks; called when a generation ends.
func (s *Stream) drain() {
	for {
		select {
		case <-s.ch:
		default:
			return
		}
	}
}

// broadcastError tells every stream of err, dropping it for a stream that
// has not taken the previous one.
func (g *GroupConsumer) broadcastError(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, ss := range g.streams {
		for _, s := range ss {
			select {
			case s.errs <- err:
			default:
			}
		}
	}
}
