package quorum

import "time"

// classifyEffect summarises one node's run over all its keys, for the
// wrapper's tests: a release when a key was released, else a hold when a
// key is held (hold: the shortest such), else a read. The decision itself
// counts each key apart (decideEffect).
func classifyEffect(keys []KeyEffect, driftFactor float64) (op EffectOp, hold time.Duration) {
	for _, k := range keys {
		if o, _ := nodeKeyOutcome(k, driftFactor); o == keyReleased {
			return EffectRelease, 0
		}
	}
	for _, k := range keys {
		if o, _ := nodeKeyOutcome(k, driftFactor); o == keyHeld && (op != EffectHold || k.Hold < hold) {
			op, hold = EffectHold, k.Hold
		}
	}
	return op, hold
}

// vote is one node's answer for decideEffect's tests: a failure, a
// refusal, or a reply and its key effects.
func vote(reply Value, keys ...KeyEffect) result[NodeEffect] {
	return result[NodeEffect]{v: NodeEffect{Reply: reply, Keys: keys}}
}

func failedVote(err error) result[NodeEffect] { return result[NodeEffect]{err: err} }

// took, extended, released and read are one key's report: own is the
// caller's token.
func took(hold time.Duration) KeyEffect {
	return KeyEffect{AfterOwn: []string{"own"}, Changed: true, Hold: hold}
}

func extended(hold time.Duration) KeyEffect {
	return KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}, Changed: true, Hold: hold}
}

func released() KeyEffect { return KeyEffect{BeforeOwn: []string{"own"}, Changed: true} }

func readOwn() KeyEffect { return KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}} }

func intReply(n int64) Value { return Value{Kind: ValueInt, Int: n} }

var (
	okReply  = Value{Kind: ValueStatus, Str: "OK"}
	nilReply = Value{}
)
