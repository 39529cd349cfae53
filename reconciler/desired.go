package reconciler

import (
	"context"
	"sync"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// operation is one Magnum operation waiting for Git: the event an event source handed over,
// and its client, who is answered with the commit that carries it. A resync is an operation
// too: the cluster's record, to be rendered again (resync set, ev the record's event),
// answered to the resync. So is Magnum's view of a cluster (view set, ev nil; Converge):
// the prologue derives the operations Git lacks of it and hands them to expanded.
type operation struct {
	ctx    context.Context
	ev     *v1alpha1.ClusterEvent
	resync *ResyncRecord
	view   *MagnumView
	digest string
	// expanded takes a view's derived operations; follows marks a derived operation
	// after the first of its view (it is not committed once the one before it failed);
	// refused is why a derived event cannot be committed (answered in the prologue).
	expanded chan []*operation
	follows  bool
	refused  error
	// at stamps the record (Now, which a test may fix); arrived times the answer.
	at      time.Time
	arrived time.Time
	answer  chan Summary
}

// key is the cluster the operation is of.
func (op *operation) key() string {
	if op.view != nil {
		return op.view.Cluster.UUID
	}
	return op.ev.Cluster.UUID
}

// desired is what the event sources want of Git that Git does not hold yet: each cluster's
// operations in the order they arrived, and the clusters to reconcile in the order they
// first asked. A cluster is queued once however many operations it has waiting, like a
// controller's work queue; operations that arrive once its reconcile claimed the others
// queue it again.
type desired struct {
	mu     sync.Mutex
	ops    map[string][]*operation // by cluster UUID, until claimed
	order  []string                // cluster UUIDs queued, oldest first
	closed bool
	// ready has a value while order is not empty.
	ready chan struct{}
}

func newDesired() *desired {
	return &desired{ops: map[string][]*operation{}, ready: make(chan struct{}, 1)}
}

// put records operations (nil ones skipped) and queues their clusters, all at once, so
// that a group taken after holds them all. A cluster already queued, or taken and not
// claimed yet, is not queued again: its reconcile will claim these operations too. It is
// false once close was called: nobody would reconcile them.
func (d *desired) put(ops ...*operation) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	for _, op := range ops {
		if op == nil {
			continue
		}
		uuid := op.key()
		if _, waiting := d.ops[uuid]; !waiting {
			d.order = append(d.order, uuid)
			d.signal()
		}
		d.ops[uuid] = append(d.ops[uuid], op)
	}
	return true
}

// requeue queues clusters with no operation (Reconciler.Requeue); those queued already,
// or taken and not claimed yet, stay where they are.
func (d *desired) requeue(uuids ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	for _, uuid := range uuids {
		if _, waiting := d.ops[uuid]; !waiting {
			d.ops[uuid] = []*operation{}
			d.order = append(d.order, uuid)
			d.signal()
		}
	}
}

func (d *desired) signal() {
	select {
	case d.ready <- struct{}{}:
	default:
	}
}

// pending counts the operations of the queued clusters, a requeued cluster as one.
func (d *desired) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, uuid := range d.order {
		n += weight(d.ops[uuid])
	}
	return n
}

// weight is what a queued cluster counts for in a group: its operations, or one for a
// requeued cluster, whose reconcile costs about what an operation does.
func weight(ops []*operation) int { return max(len(ops), 1) }

// take dequeues the oldest clusters, as many as have at most limit operations waiting
// together (at least one cluster).
func (d *desired) take(limit int) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, k := 0, 0
	for ; k < len(d.order); k++ {
		m := weight(d.ops[d.order[k]])
		if k > 0 && n+m > limit {
			break
		}
		n += m
	}
	uuids := d.order[:k:k]
	d.order = d.order[k:]
	if len(d.order) > 0 {
		d.signal()
	}
	return uuids
}

// claim takes a cluster's waiting operations, oldest first: the scope of its reconcile.
func (d *desired) claim(uuid string) []*operation {
	d.mu.Lock()
	defer d.mu.Unlock()
	ops := d.ops[uuid]
	delete(d.ops, uuid)
	return ops
}

// close refuses further operations and returns those still waiting, to be answered.
func (d *desired) close() []*operation {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var left []*operation
	for _, ops := range d.ops {
		left = append(left, ops...)
	}
	d.ops, d.order = map[string][]*operation{}, nil
	return left
}
