package proxy

import (
	"sync"
	"sync/atomic"

	"github.com/redlock-proxy/redlock-proxy/resp"
)

// watchSet is every connection's WATCH of a key, so that a write of the
// key through this proxy makes every other watcher's EXEC fail, as one
// Redis does: two WATCH k, GET k, MULTI, PEXPIRE k, EXEC of one key by
// two connections both succeeded, where one Redis aborts the second.
// Another proxy's writes are not seen: across proxies each EXEC is the
// compare-and-pexpire or compare-and-delete by its token alone.
type watchSet struct {
	mu   sync.Mutex
	keys map[string]*watchedKey
	// n counts the watches, so that a write with none skips the lock.
	n atomic.Int64
}

// watchedKey is one key's watchers.
type watchedKey struct {
	exec     sync.Mutex          // one EXEC of the key at a time, as in Redis
	watchers map[*watch]struct{} // guarded by watchSet.mu
}

// watch is one connection's WATCH of key.
type watch struct {
	set     *watchSet
	key     string
	wk      *watchedKey
	touched atomic.Bool // a write of key was seen since WATCH
}

func newWatchSet() *watchSet { return &watchSet{keys: make(map[string]*watchedKey)} }

// add starts a watch of key.
func (ws *watchSet) add(key string) *watch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	wk := ws.keys[key]
	if wk == nil {
		wk = &watchedKey{watchers: make(map[*watch]struct{})}
		ws.keys[key] = wk
	}
	w := &watch{set: ws, key: key, wk: wk}
	wk.watchers[w] = struct{}{}
	ws.n.Add(1)
	return w
}

// release ends the watch; a nil watch is none.
func (w *watch) release() {
	if w == nil {
		return
	}
	ws := w.set
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if _, ok := w.wk.watchers[w]; ok {
		delete(w.wk.watchers, w)
		ws.n.Add(-1)
	}
	if len(w.wk.watchers) == 0 && ws.keys[w.key] == w.wk {
		delete(ws.keys, w.key)
	}
}

// touch marks every watch of key but except as written.
func (ws *watchSet) touch(key string, except *watch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if wk := ws.keys[key]; wk != nil {
		for w := range wk.watchers {
			if w != except {
				w.touched.Store(true)
			}
		}
	}
}

// touchWritten marks the watches of the keys a command may have written,
// judged from its reply: a SET that set, a DEL or a script that ran (an
// EXEC that wrote marks them itself).
func (ws *watchSet) touchWritten(name string, args [][]byte, rep resp.Reply) {
	switch {
	case rep.IsError():
		return
	case name == "set" && rep.IsNull(): // NX: nothing set
		return
	case name != "set" && name != "del" && name != "delex" && name != "delifeq" && name != "eval" && name != "evalsha":
		return
	}
	if ws.n.Load() == 0 {
		return // nothing watched: no lock on a lock's hot path
	}
	for _, k := range writtenKeys(name, args) {
		ws.touch(string(k), nil)
	}
}
