package openstack

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// fetchTimeout bounds one shared lookup. It runs detached from the context of the caller
// that started it, so one event giving up does not fail the others waiting for it.
const fetchTimeout = 2 * time.Minute

// sweepEvery is how many insertions pass between sweeps of expired entries.
const sweepEvery = 256

// cacheKey identifies one lookup. Project is part of every key: what a name resolves to
// may depend on the project asking.
type cacheKey struct {
	project, kind, ref string
}

// cache shares lookups between events: a result is kept for ttl, and callers asking for a
// key that is being fetched wait for that fetch instead of starting their own (single
// flight). Results that blame the input (*v1alpha1.FieldError: not found, ambiguous) are
// kept like values, since asking again within ttl would give the same answer; other errors
// are handed to the waiting callers and then forgotten, so the next caller retries.
type cache struct {
	ttl     time.Duration
	now     func() time.Time
	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	inserts int
}

type cacheEntry struct {
	ready   chan struct{} // closed when val and err are set
	val     any
	err     error
	expires time.Time
}

func newCache(ttl time.Duration, now func() time.Time) *cache {
	return &cache{ttl: ttl, now: now, entries: map[cacheKey]*cacheEntry{}}
}

// cached returns the value for key, fetching it at most once per ttl however many callers
// ask at the same time.
func cached[T any](ctx context.Context, c *cache, key cacheKey, fetch func(context.Context) (T, error)) (T, error) {
	v, err := c.get(ctx, key, func(ctx context.Context) (any, error) { return fetch(ctx) })
	t, _ := v.(T)
	return t, err
}

func (c *cache) get(ctx context.Context, key cacheKey, fetch func(context.Context) (any, error)) (any, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok {
		select {
		case <-e.ready:
			if c.now().Before(e.expires) {
				c.mu.Unlock()
				return e.val, e.err
			}
			ok = false // expired: fetch again below
		default: // being fetched: wait below
		}
	}
	if !ok {
		e = &cacheEntry{ready: make(chan struct{})}
		c.entries[key] = e
		c.sweepLocked()
		go c.fill(context.WithoutCancel(ctx), key, e, fetch)
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e.val, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *cache) fill(ctx context.Context, key cacheKey, e *cacheEntry, fetch func(context.Context) (any, error)) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	val, err := fetch(ctx)
	var fe *v1alpha1.FieldError
	c.mu.Lock()
	e.val, e.err = val, err
	e.expires = c.now().Add(c.ttl)
	if err != nil && !errors.As(err, &fe) && c.entries[key] == e {
		delete(c.entries, key)
	}
	close(e.ready)
	c.mu.Unlock()
}

// sweepLocked drops expired entries now and then, so keys nobody asks for again do not
// accumulate.
func (c *cache) sweepLocked() {
	c.inserts++
	if c.inserts%sweepEvery != 0 {
		return
	}
	now := c.now()
	for k, e := range c.entries {
		select {
		case <-e.ready:
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		default:
		}
	}
}
