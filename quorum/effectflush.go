package quorum

import (
	"context"
	"errors"
)

// FlushEffects removes from every node what serving scripts by their
// effect added there: the wrapper's libraries (every library named
// rlp_…, of any proxy version: those of an older version held one body
// each) and the node's script cache, where the wrapper runs as a script
// on a node without functions. A catalogue or engine script the node
// then lacks is sent again on its next use, as after a restart. SCRIPT
// FLUSH through the proxy calls it. It returns how many nodes were
// flushed, and the nodes' errors.
func (e *Engine) FlushEffects(ctx context.Context) (int, error) {
	results := fanOut(ctx, e, func(ctx context.Context, _ int, n Node) (bool, error) {
		err := n.FlushEffects(ctx)
		if errors.Is(err, errUnsupported) {
			return false, nil // nothing to flush
		}
		return true, err
	})
	flushed := 0
	for _, r := range results {
		if r.err == nil && r.v {
			flushed++
		}
	}
	return flushed, failures(results)
}
