package runtimeapi

import (
	"context"
	"fmt"
	"time"
)

// Invoke runs the function with payload and returns its response. A function error, a
// timeout or a crash is an error (a *FunctionError); after a timeout or a crash the next
// invocation gets a new process, as Lambda starts a new execution environment. Cancelling
// ctx abandons the invocation and stops the process, since it may still be running it.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if len(payload) > MaxPayload {
		return nil, fmt.Errorf("%w: %d bytes", ErrPayloadTooLarge, len(payload))
	}
	f.invoking.Lock()
	defer f.invoking.Unlock()
	inv := newInvocation(payload)
	timer := time.NewTimer(f.cfg.Timeout)
	defer timer.Stop()
	var env *environment
	// A process that ends before taking the invocation (it panicked on the previous one and
	// is on its way out) costs nothing: the invocation goes to a fresh one.
	for attempt := 0; env == nil; attempt++ {
		e, err := f.ensure(ctx)
		if err != nil {
			return nil, err
		}
		// The clock starts after init, as Lambda does not count a cold start against the
		// timeout; a process that does not ask for work in time times out like a slow one.
		inv.deadline = time.Now().Add(f.cfg.Timeout)
		timer.Reset(f.cfg.Timeout)
		select {
		case e.next <- inv:
			env = e
		case <-e.exited:
			f.drop(e)
			if attempt > 0 {
				return nil, e.exitError(inv.id)
			}
		case <-timer.C:
			return nil, f.timedOut(e, inv)
		case <-f.closing:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	select {
	case r := <-inv.result:
		return r.body, r.err
	case <-env.exited:
		select {
		case r := <-inv.result: // answered, then exited (a panic does both)
			return r.body, r.err
		default:
		}
		f.drop(env)
		return nil, env.exitError(inv.id)
	case <-timer.C:
		return nil, f.timedOut(env, inv)
	case <-f.closing:
		return nil, ErrClosed
	case <-ctx.Done():
		f.drop(env)
		return nil, ctx.Err()
	}
}

// timedOut stops the process still running inv (Lambda ends the environment) and returns
// the timeout error.
func (f *Function) timedOut(env *environment, inv *invocation) error {
	f.log.Warn("runtimeapi: invocation timed out; stopping the process", "requestId", inv.id, "timeout", f.cfg.Timeout)
	f.drop(env)
	return &FunctionError{
		Type:    "Sandbox.Timedout",
		Message: fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds", inv.id, f.cfg.Timeout.Seconds()),
		cause:   ErrTimeout,
	}
}

// ensure returns the running environment, starting one (and waiting for its init) if there
// is none or the last one ended.
func (f *Function) ensure(ctx context.Context) (*environment, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, ErrClosed
	}
	if f.env != nil && !f.env.dead() {
		env := f.env
		f.mu.Unlock()
		return env, nil
	}
	old := f.env
	f.env = nil
	f.mu.Unlock()
	if old != nil {
		old.shutdown(0)
	}

	env, err := f.spawn()
	if err != nil {
		return nil, err
	}
	if err := env.waitReady(ctx, f.cfg.InitTimeout, f.closing); err != nil {
		env.shutdown(0)
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		go env.shutdown(0)
		return nil, ErrClosed
	}
	f.env = env
	return env, nil
}

// drop kills env (when it is still the current one, or not) so the next invocation starts
// a new process.
func (f *Function) drop(env *environment) {
	f.mu.Lock()
	if f.env == env {
		f.env = nil
	}
	f.mu.Unlock()
	env.shutdown(0)
}
