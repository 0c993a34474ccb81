package quorum

import (
	"context"
	"errors"
	"strings"
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
		err := n.flushEffects(ctx)
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

func (n *redisNode) flushEffects(ctx context.Context) error {
	if !n.p.noFunctions.Load() {
		cmd, err := n.p.do(ctx, "function", "list", "libraryname", "rlp_*")
		if err != nil && !refusesFunctions(err) {
			return err
		}
		libs, _ := cmd.Slice()
		for _, l := range libs {
			name := libraryName(l)
			if !strings.HasPrefix(name, "rlp_") {
				continue
			}
			if _, err := n.p.do(ctx, "function", "delete", name); err != nil && !isReplyError(err, "ERR Library not found") {
				return err
			}
		}
	}
	_, err := n.p.do(ctx, "script", "flush")
	return err
}

// libraryName reads library_name from one entry of FUNCTION LIST (a
// flat array of names and values in RESP2, a map in RESP3).
func libraryName(v any) string {
	switch l := v.(type) {
	case []any:
		for i := 0; i+1 < len(l); i += 2 {
			if l[i] == "library_name" {
				s, _ := l[i+1].(string)
				return s
			}
		}
	case map[any]any:
		s, _ := l["library_name"].(string)
		return s
	}
	return ""
}
