package quorum

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// recordWait is how long FENCE's record waits before it is written on the
// nodes not asked (recordOnTheRest): a hold released through this engine
// within it never needs the record, so the release drops the write, and
// a hold fenced again through it has the record written first.
const recordWait = 2 * time.Millisecond

// restRecords are FENCE's records still to be written on the nodes not
// asked, one per hold. Like any write in flight, they are lost with the
// proxy; the model counts them as write-backs that may land late or not
// at all.
type restRecords struct {
	wait   time.Duration // recordWait; longer in tests
	mu     sync.Mutex
	n      atomic.Int64 // len(m), read without mu by releases
	closed bool
	m      map[holdID]*restRecord
}

type holdID struct{ key, token string }

type restRecord struct {
	ctx  context.Context
	id   holdID
	t    int64
	rest []bool
}

// recordOnTheRest writes T, the token a quorum asked first agreed on, on
// the nodes not asked, recordWait after the reply: the record is then on
// more than a quorum, so a repeated FENCE of the hold with one node lost
// still finds it on a quorum and answers T again, as after a round of
// every node (review27). To the model it is the write-back that may end a
// round that agreed, landing late.
func (e *Engine) recordOnTheRest(ctx context.Context, key, token string, t int64, asked []bool) {
	r := &restRecord{ctx: context.WithoutCancel(ctx), id: holdID{key, token}, t: t, rest: make([]bool, len(asked))}
	for i, a := range asked {
		r.rest[i] = !a
	}
	q := &e.later
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if q.m == nil {
		q.m = make(map[holdID]*restRecord)
	}
	if old, ok := q.m[r.id]; ok {
		// A repeat within the wait: its timer stays, so that FENCEs
		// repeated often do not put the write off for good.
		old.t, old.rest = r.t, r.rest
		return
	}
	q.n.Add(1)
	q.m[r.id] = r
	time.AfterFunc(q.wait, func() { e.writeRest(r) })
}

// writeRest writes r unless a release or Close took it first.
func (e *Engine) writeRest(r *restRecord) {
	q := &e.later
	q.mu.Lock()
	if q.m[r.id] != r {
		q.mu.Unlock()
		return
	}
	delete(q.m, r.id)
	e.writes.Add(1) // under mu: Close waits only after it took the rest
	q.n.Add(-1)
	q.mu.Unlock()
	defer e.writes.Done()
	fanOutCallOn(r.ctx, e, pipeWriteCounter(r.id.key, r.id.token, fenceField, r.t, false), r.rest, func(ctx context.Context, _ int, n Node) (CounterWrite, error) {
		return fencer(n).WriteCounter(ctx, r.id.key, r.id.token, fenceField, r.t, false)
	})
}

// writeRecordNow writes the record of key's hold by token now, if it is
// still waiting: a repeated FENCE then finds it on every node it reached.
func (e *Engine) writeRecordNow(key, token string) {
	q := &e.later
	if q.n.Load() == 0 {
		return
	}
	q.mu.Lock()
	r := q.m[holdID{key, token}]
	q.mu.Unlock()
	if r != nil {
		e.writeRest(r)
	}
}

// dropRecord forgets the record of a hold a quorum released: its release
// deletes the record where it is, and there is no hold left to repeat.
func (e *Engine) dropRecord(key, token string) {
	q := &e.later
	if q.n.Load() == 0 {
		return
	}
	q.mu.Lock()
	if _, ok := q.m[holdID{key, token}]; ok {
		delete(q.m, holdID{key, token})
		q.n.Add(-1)
	}
	q.mu.Unlock()
}

// flushRecords writes every record still waiting, at once, and stops
// taking new ones (Close).
func (e *Engine) flushRecords() {
	q := &e.later
	q.mu.Lock()
	q.closed = true
	rs := make([]*restRecord, 0, len(q.m))
	for _, r := range q.m {
		rs = append(rs, r)
	}
	q.mu.Unlock()
	for _, r := range rs {
		e.writeRest(r)
	}
}
