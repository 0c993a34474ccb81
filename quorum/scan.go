package quorum

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/bits"
	"net"
	"slices"
	"strings"
)

// A quorum scan walks the nodes one after the other, each with its own
// SCAN, and reports a key found on a node when a quorum holds it and no
// node already walked to the end holds it too. Its cursor is one integer,
// as Redis's:
//
//	bits  0-39  the SCAN cursor of the node being walked (Redis's is
//	            under its table's size: 2^40 slots is a trillion keys)
//	bits 40-47  eight bits of a hash of the node list
//	bits 48-51  that node's place
//	bits 52-60  the nodes walked to the end, one bit each
//	bits 61-63  three bits of a hash of that node's run_id
//
// A node's place is in the nodes sorted by address, so that proxies that
// list the same masters in another order (clients behind a load balancer)
// read one another's cursors; a cursor from another node list is refused.
// A node that is down, in quarantine or failing when the walk reaches it
// is passed over, not marked walked. A key a quorum holds from the first
// call to the last is on at least one node that is walked whenever a
// quorum of the nodes is up, so it is reported, once, unless a node that
// had reported it cannot answer when a later node is walked (a
// duplicate, which SCAN allows). A restarted node hashes its keys anew,
// so its own cursor means nothing there: the run_id bits restart its walk
// from 0 (duplicates again, never a miss).

// ScanCursor is where a quorum scan stands. The zero cursor starts a scan,
// and a scan is over when Scan returns it.
type ScanCursor struct {
	Node    int    // the node being walked, by its place (scanOrder)
	Walked  uint16 // the nodes walked to the end, one bit each
	At      uint64 // the node's own SCAN cursor
	RunHash uint8  // three bits of the node's run_id when At was read
	List    uint8  // eight bits of a hash of the node list (scanOrder)
}

const (
	atBits    = 40
	maxWalked = 9 // bits for Walked: the nodes a proxy may have
)

// ErrBadCursor is a scan cursor that no scan of this proxy returned.
var ErrBadCursor = errors.New("quorum: invalid cursor")

// Encode packs c into SCAN's integer cursor.
func (c ScanCursor) Encode() uint64 {
	return c.At | uint64(c.List)<<atBits | uint64(c.Node)<<48 | uint64(c.Walked)<<52 | uint64(c.RunHash&7)<<61
}

// DecodeCursor unpacks an integer cursor for a proxy over nodes nodes.
func DecodeCursor(v uint64, nodes int) (ScanCursor, error) {
	c := ScanCursor{
		At:      v & (1<<atBits - 1),
		List:    uint8(v >> atBits),
		Node:    int(v >> 48 & 0xf),
		Walked:  uint16(v >> 52 & (1<<maxWalked - 1)),
		RunHash: uint8(v >> 61),
	}
	if c.Node >= nodes || c.Walked>>nodes != 0 {
		return ScanCursor{}, ErrBadCursor
	}
	return c, nil
}

// ScanKey is a key a scan found, with its state as Inspect reports it.
type ScanKey struct {
	Key   string
	State State
}

// keyScanner is the part of Node that walks its keys.
type keyScanner interface {
	// ScanKeys runs SCAN cursor [MATCH match] [COUNT count] [TYPE typ].
	ScanKeys(ctx context.Context, cursor uint64, match string, count int64, typ string) ([]string, uint64, error)
}

// Scan runs one step of a quorum scan from cur: one SCAN on the node being
// walked, and a quorum read of each key it returned. It returns the keys
// a quorum holds, not reserved, of type typ if typ is set ("string",
// "hash", "zset"), and the next cursor. match, count and typ go to the
// node's SCAN as given.
// A scan that ends with too few nodes walked is unavailable (ended). A
// cursor of another node list is ErrBadCursor.
func (e *Engine) Scan(ctx context.Context, cur ScanCursor, match string, count int64, typ string) (ScanCursor, []ScanKey, error) {
	if len(e.nodes) > maxWalked {
		return ScanCursor{}, nil, fmt.Errorf("quorum: a scan walks at most %d nodes", maxWalked)
	}
	order, list := e.scanOrder()
	if cur != (ScanCursor{}) && cur.List != list {
		return ScanCursor{}, nil, ErrBadCursor
	}
	next, found, err := e.scan(ctx, cur, order, match, count, typ)
	if next != (ScanCursor{}) {
		next.List = list
	}
	return next, found, err
}

// scanOrder is the nodes' indexes sorted by address (canonicalAddr), and
// eight bits of a hash of those addresses.
func (e *Engine) scanOrder() ([]int, uint8) {
	order := make([]int, len(e.health))
	for i := range order {
		order[i] = i
	}
	names := make([]string, len(e.health))
	for i, h := range e.health {
		names[i] = canonicalAddr(h.addr)
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	h := fnv.New32a()
	for _, i := range order {
		h.Write([]byte(names[i]))
		h.Write([]byte{0})
	}
	return order, uint8(h.Sum32())
}

// canonicalAddr is addr with an IP literal in one spelling
// (::ffff:127.0.0.1 and 127.0.0.1 alike) and a host name in lower case,
// so that proxies spelling the masters otherwise sort them alike.
func canonicalAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil {
		return net.JoinHostPort(ip.String(), port)
	}
	return net.JoinHostPort(strings.ToLower(host), port)
}

// scan is Scan's step, with the nodes' order.
func (e *Engine) scan(ctx context.Context, cur ScanCursor, order []int, match string, count int64, typ string) (ScanCursor, []ScanKey, error) {
	j := order[cur.Node]
	var walked uint16 // cur.Walked by node index
	for place, i := range order {
		if cur.Walked&(1<<place) != 0 {
			walked |= 1 << i
		}
	}
	status := e.Status()[j]
	if status.State != StateUp {
		return e.ended(cur, nil)
	}
	hash := runHash(status.RunID)
	at := cur.At
	if at != 0 && hash != cur.RunHash {
		at = 0 // the node restarted: its old cursor means nothing
	}
	nctx, cancel := context.WithTimeout(ctx, e.cfg.NodeTimeout)
	keys, next, err := e.nodes[j].ScanKeys(nctx, at, match, count, typ)
	cancel()
	switch {
	case err != nil:
		return e.ended(cur, nil)
	case next >= 1<<atBits:
		return ScanCursor{}, nil, fmt.Errorf("quorum: node %d's cursor %d does not fit", j, next)
	}
	var found []ScanKey
	for _, k := range keys {
		if Reserved(k) {
			continue
		}
		st, holders, err := e.inspect(ctx, k)
		switch {
		case err != nil:
			return ScanCursor{}, nil, err
		case !st.Held, holders&walked != 0:
			continue // not held, or reported where a walked node has it
		case typ != "" && typeName(st) != typ:
			continue
		}
		found = append(found, ScanKey{Key: k, State: st})
	}
	if after := e.Status()[j]; after.RunID != status.RunID || after.State != StateUp {
		// It restarted or failed during the SCAN: what it gave may come
		// from a cursor it no longer knows, so it is not marked walked.
		return e.ended(cur, found)
	}
	if next != 0 {
		return ScanCursor{Node: cur.Node, Walked: cur.Walked, At: next, RunHash: hash}, found, nil
	}
	cur.Walked |= 1 << cur.Node
	return e.ended(cur, found)
}

// passOver moves cur to the next node, from its start; past the last
// node, the scan is over.
func (e *Engine) passOver(cur ScanCursor) ScanCursor {
	if cur.Node+1 >= len(e.nodes) {
		return ScanCursor{}
	}
	return ScanCursor{Node: cur.Node + 1, Walked: cur.Walked}
}

// ended moves cur on (passOver) and checks a scan that passed its last
// node: a key a quorum holds is surely reported only when more nodes than
// the quorum leaves out were walked to the end; with fewer, the scan is
// unavailable (an empty answer would read as "no such keys").
func (e *Engine) ended(cur ScanCursor, found []ScanKey) (ScanCursor, []ScanKey, error) {
	if next := e.passOver(cur); next != (ScanCursor{}) {
		return next, found, nil
	}
	n := len(e.nodes)
	walked := bits.OnesCount64(uint64(cur.Walked))
	if walked < n-Quorum(n)+1 {
		o := Outcome{Total: n, Granted: walked, Failed: n - walked}
		return ScanCursor{}, nil, &OutcomeError{Outcome: o, Unavailable: true}
	}
	return ScanCursor{}, found, nil
}

// typeName is a held key's type as TYPE names it.
func typeName(st State) string {
	if st.Type == "" {
		return "string"
	}
	return st.Type
}

// TypeName is a held key's type as TYPE names it: "string", "hash",
// "zset".
func (st State) TypeName() string { return typeName(st) }

// runHash is three bits of a hash of runID.
func runHash(runID string) uint8 {
	h := fnv.New32a()
	h.Write([]byte(runID))
	return uint8(h.Sum32() & 7)
}
