package proxy

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/resp"
)

// histBuckets is the number of latency buckets: bucket i counts calls that
// took at most 2^i µs (the last one, everything longer), as LATENCY
// HISTOGRAM reports them.
const histBuckets = 32

// cmdStats is one command's counters, as INFO commandstats, INFO
// latencystats and LATENCY HISTOGRAM show them.
type cmdStats struct {
	calls, usec atomic.Int64
	// rejected counts calls refused before they ran (arity, NOAUTH,
	// NOPERM), failed those that ran and replied with an error.
	rejected, failed atomic.Int64
	hist             [histBuckets]atomic.Int64
}

// stats is what the server counts of its commands and clients. The map is
// fixed at New; only the counters change.
type stats struct {
	byName      map[string]*cmdStats // "set", "client|setname"
	commands    atomic.Int64         // total_commands_processed
	connections atomic.Int64         // total_connections_received
	rejectedCon atomic.Int64         // rejected_connections
	errors      atomic.Int64         // total_error_replies
	// monitorDropped counts MONITOR lines dropped for a slow reader.
	monitorDropped atomic.Int64
	// byError counts error replies by their code (INFO errorstats), up
	// to maxErrorCodes codes, as Redis keeps at most 128.
	byError sync.Map // code -> *atomic.Int64
	codes   atomic.Int32
}

const maxErrorCodes = 128

// errorReply counts an error reply by its code: "ERR", "NOQUORUM", ...
func (st *stats) errorReply(rep resp.Reply) {
	st.errors.Add(1)
	code, _, _ := strings.Cut(rep.Text(), " ")
	if v, ok := st.byError.Load(code); ok {
		v.(*atomic.Int64).Add(1)
		return
	}
	if st.codes.Load() >= maxErrorCodes {
		return
	}
	v, loaded := st.byError.LoadOrStore(code, new(atomic.Int64))
	if !loaded {
		st.codes.Add(1)
	}
	v.(*atomic.Int64).Add(1)
}

// newStats returns counters for every command and subcommand in the table.
func newStats() *stats {
	st := &stats{byName: map[string]*cmdStats{}}
	for name, cm := range commands {
		st.byName[name] = &cmdStats{}
		for sub := range cm.subs {
			st.byName[name+"|"+sub] = &cmdStats{}
		}
	}
	return st
}

// statName is the name a command is counted under: "container|sub" for a
// known subcommand, as Redis counts it.
func statName(name string, args [][]byte) string {
	cm, ok := commands[name]
	if !ok || cm.subs == nil || len(args) < 2 {
		return name
	}
	sub := ascii.Lower(args[1])
	if _, ok := cm.subs[sub]; !ok {
		return name
	}
	return name + "|" + sub
}

// ran counts a command that ran for took, and its reply if an error.
func (st *stats) ran(name string, took time.Duration, rep resp.Reply) {
	failed := rep.IsError()
	st.commands.Add(1)
	cs := st.byName[name]
	if cs == nil {
		return
	}
	us := took.Microseconds()
	cs.calls.Add(1)
	cs.usec.Add(us)
	cs.hist[bucket(us)].Add(1)
	if failed {
		cs.failed.Add(1)
		st.errorReply(rep)
	}
}

// rejected counts a command refused before it ran, with the refusal.
func (st *stats) rejected(name string, rep resp.Reply) {
	st.errorReply(rep)
	if cs := st.byName[name]; cs != nil {
		cs.rejected.Add(1)
	}
}

// reset zeroes every counter but the connections', as CONFIG RESETSTAT.
func (st *stats) reset() {
	for _, cs := range st.byName {
		cs.calls.Store(0)
		cs.usec.Store(0)
		cs.rejected.Store(0)
		cs.failed.Store(0)
		for i := range cs.hist {
			cs.hist[i].Store(0)
		}
	}
	st.commands.Store(0)
	st.rejectedCon.Store(0)
	st.errors.Store(0)
	st.byError.Range(func(k, _ any) bool {
		st.byError.Delete(k)
		return true
	})
	st.codes.Store(0)
}

// bucket is the histogram bucket of a call that took us µs: the smallest
// i with us <= 2^i.
func bucket(us int64) int {
	if us <= 1 {
		return 0
	}
	return min(bits.Len64(uint64(us-1)), histBuckets-1)
}

// used returns the names of the commands that were called or refused,
// sorted.
func (st *stats) used() []string {
	var names []string
	for name, cs := range st.byName {
		if cs.calls.Load() > 0 || cs.rejected.Load() > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// cumulative returns the histogram's counts summed up to each bucket.
func (cs *cmdStats) cumulative() (cum [histBuckets]int64) {
	var n int64
	for i := range cs.hist {
		n += cs.hist[i].Load()
		cum[i] = n
	}
	return cum
}

// percentile is the upper bound in µs of the bucket holding the p-th
// percentile of the calls, 0 with no calls.
func percentile(cum [histBuckets]int64, p float64) float64 {
	total := cum[histBuckets-1]
	if total == 0 {
		return 0
	}
	want := int64(float64(total)*p/100 + 0.5)
	want = max(want, 1)
	for i, n := range cum {
		if n >= want {
			return float64(int64(1) << i)
		}
	}
	return float64(int64(1) << (histBuckets - 1))
}

// commandStatsLine is one command's line of INFO commandstats.
func commandStatsLine(name string, cs *cmdStats) string {
	calls, usec := cs.calls.Load(), cs.usec.Load()
	per := 0.0
	if calls > 0 {
		per = float64(usec) / float64(calls)
	}
	return fmt.Sprintf("cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
		name, calls, usec, per, cs.rejected.Load(), cs.failed.Load())
}

// latencyStatsLine is one command's line of INFO latencystats.
func latencyStatsLine(name string, cs *cmdStats) string {
	cum := cs.cumulative()
	return fmt.Sprintf("latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n",
		name, percentile(cum, 50), percentile(cum, 99), percentile(cum, 99.9))
}

// errorStats are INFO errorstats' lines, by code.
func (st *stats) errorStats() []string {
	var lines []string
	st.byError.Range(func(k, v any) bool {
		lines = append(lines, fmt.Sprintf("errorstat_%s:count=%d\r\n", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(lines)
	return lines
}
