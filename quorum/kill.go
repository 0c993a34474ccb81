package quorum

import "context"

// Kill is what SCRIPT KILL did on one node.
type Kill uint8

const (
	KillNotBusy    Kill = iota // no script ran
	KillDone                   // the running script was stopped
	KillUnkillable             // the script has written: it runs on
)

// KillResult is the engine's answer to KillScript.
type KillResult struct {
	Killed, Unkillable, NotBusy int
	// Unkillable is the first unkillable node's own error text.
	UnkillableText string
}

// scriptKiller is the part of Node that stops the script it runs.
type scriptKiller interface {
	KillScript(ctx context.Context) (Kill, string, error)
	// ScriptBusy reports whether the node runs a script, stopping none.
	ScriptBusy(ctx context.Context) (bool, error)
}

// KillScript stops the script each node runs, as SCRIPT KILL would on
// one Redis: every node is asked, the breaker's down ones included (a
// node busy in a script answers nothing else, and may be marked down for
// it). It fails only when no node answered.
func (e *Engine) KillScript(ctx context.Context) (KillResult, error) {
	results := each(ctx, e, e.cfg.NodeTimeout, func(ctx context.Context, _ int, n Node) (killAnswer, error) {
		kill, text, err := n.KillScript(ctx)
		return killAnswer{kill, text}, err
	})
	var r KillResult
	answered := 0
	for _, res := range results {
		if res.err != nil {
			continue
		}
		answered++
		switch res.v.kill {
		case KillDone:
			r.Killed++
		case KillUnkillable:
			if r.Unkillable == 0 {
				r.UnkillableText = res.v.text
			}
			r.Unkillable++
		default:
			r.NotBusy++
		}
	}
	if answered == 0 {
		return r, &OutcomeError{Outcome: Outcome{Total: len(e.nodes), Failed: len(e.nodes)}, Unavailable: true, Failures: failures(results)}
	}
	return r, nil
}

// ScriptBusy reports whether a node runs a script (FUNCTION KILL through
// the proxy must stop none: clients run no functions through it). Every
// node is asked, as by KillScript; it fails only when no node answered.
func (e *Engine) ScriptBusy(ctx context.Context) (bool, error) {
	results := each(ctx, e, e.cfg.NodeTimeout, func(ctx context.Context, _ int, n Node) (bool, error) {
		return n.ScriptBusy(ctx)
	})
	answered := 0
	for _, res := range results {
		if res.err == nil {
			if res.v {
				return true, nil
			}
			answered++
		}
	}
	if answered == 0 {
		return false, &OutcomeError{Outcome: Outcome{Total: len(e.nodes), Failed: len(e.nodes)}, Unavailable: true, Failures: failures(results)}
	}
	return false, nil
}

type killAnswer struct {
	kill Kill
	text string
}
