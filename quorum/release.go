package quorum

import (
	"context"
	"errors"
	"time"
)

// Released says what a release did.
type Released struct {
	// Keys is how many keys of the lock a quorum of nodes held with the
	// token; they are now deleted on every node that answered.
	Keys int
	// Missing is how many keys no answering node held under any token:
	// the lock had expired rather than been taken.
	Missing int
}

// Release deletes every key of l on every node where it still holds l's
// token. A key counts as released only if a quorum held it. The error,
// if any, matches ErrUnavailable: too few nodes answered to say.
func (e *Engine) Release(ctx context.Context, l Lock) (rel Released, err error) {
	if e.cfg.Observer != nil {
		start := time.Now()
		defer func() {
			res := err
			if err == nil && rel.Keys < len(l.Keys) {
				res = ErrDenied // not every key was ours
			}
			e.observe(OpRelease, start, res)
		}()
	}
	results := fanOutCall(ctx, e, func(b Batch) Call[[]Found] { return b.ReleaseCall(l) }, func(nctx context.Context, i int, n Node) ([]Found, error) {
		return dated(nctx, ctx, e, i, func(nctx context.Context, until int64) ([]Found, error) { return n.Release(nctx, l, until) })
	})
	fails := failures(results)
	for k := range l.Keys {
		o := Outcome{Total: len(e.nodes)}
		other := 0
		for _, r := range results {
			switch {
			case r.err != nil || len(r.v) != len(l.Keys):
				o.Failed++
			case r.v[k] == FoundDeleted:
				o.Granted++
			case r.v[k] == FoundOther:
				o.Denied++
				other++
			default:
				o.Denied++
			}
		}
		err := verdict(o, e.quorum, fails)
		switch {
		case err == nil:
			rel.Keys++
		case errors.Is(err, ErrUnavailable):
			return Released{}, err
		case other == 0 && o.Granted == 0:
			rel.Missing++
		}
	}
	return rel, nil
}
