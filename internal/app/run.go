package app

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// Run serves clients until SIGTERM or SIGINT, or until ctx ends,
// reloading on SIGHUP; then it drains (Drain) for shutdown_grace,
// which a second signal or the last client leaving cuts short, and
// shuts down: the listener closes and each command in flight gets its
// reply. It closes a.
func (a *App) Run(ctx context.Context) error {
	defer a.Close()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	errc := make(chan error, 1)
	ln := a.ln
	a.ln = nil                              // the server's now: Shutdown closes it
	go func() { errc <- a.srv.Serve(ln) }() // waited for below

	for stop := false; !stop; {
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
			stop = true
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				a.reload()
				continue
			}
			stop = true
		}
	}
	a.Drain()
	a.mu.Lock()
	timer := time.NewTimer(a.grace)
	a.mu.Unlock()
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for stop := false; !stop; {
		select {
		case err := <-errc:
			return err
		case <-timer.C:
			stop = true
		case <-tick.C:
			stop = a.srv.Clients() == 0
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				a.reload()
				continue
			}
			stop = true
		}
	}
	a.log.Info("shutting down")
	a.mu.Lock()
	flush := flushTime(a.pc) // the command_timeout now in force
	a.mu.Unlock()
	sctx, cancel := context.WithTimeout(context.Background(), flush)
	defer cancel()
	if err := a.srv.Shutdown(sctx); err != nil {
		a.log.Warn("shutdown cut short", "err", err)
	}
	return <-errc
}

// reload is Reload for a signal: a refusal is logged.
func (a *App) reload() {
	if err := a.Reload(); err != nil {
		a.log.Error("reload refused; the running config stays", "err", err)
	}
}

// Drain starts the drain: /readyz turns 503 and acquires are refused at
// once, while holders still release and extend. Run ends it.
func (a *App) Drain() {
	a.srv.Drain()
	a.mu.Lock()
	grace := a.grace
	a.mu.Unlock()
	a.log.Info("draining", "shutdown_grace", grace, "clients", a.srv.Clients())
}

// flushTime bounds the wait, once the drain ends, for the commands in
// flight: each ends within command_timeout; one more second for its reply
// to be written.
func flushTime(pc proxy.Config) time.Duration { return pc.WithDefaults().CommandTimeout + time.Second }

// stopTime is the longest a stop takes: the drain, then flushTime. A
// supervisor's stop timeout must be longer (deploy/).
func (fc fileConfig) stopTime() time.Duration {
	return fc.ShutdownGrace.Duration + flushTime(fc.proxyConfig(nil))
}
