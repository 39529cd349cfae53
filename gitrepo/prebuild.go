package gitrepo

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
)

// prebuilt is a change built on the chain's base, ahead of its turn, and what its builder
// read to build it.
type prebuilt struct {
	build  Builder
	change Change
	err    error
	reads  readSet
	// skipped is set when the prebuilder stopped before this job's turn.
	skipped bool
	done    chan struct{}
}

// prebuilder builds the changes of a group's jobs side by side on the base of the chain,
// in order, on as many goroutines as the Go runtime runs at once. The builders' reading
// and computing is most of what building a group costs (a plan of one event each, in the
// service), while the chain that commits their changes is necessarily one after the
// other; building ahead uses the cores the chain leaves idle. The chain takes each change
// in its turn and keeps it when nothing committed before it touched what its builder
// read.
type prebuilder struct {
	jobs []*prebuilt // nil for a job left to the chain
	next atomic.Int64
	stop atomic.Bool
	wg   sync.WaitGroup
}

// prebuild starts building every job without a change of its own on base; nil when there
// is nothing to build side by side. Callers hold mu and must call wait.
func (r *Repo) prebuild(base plumbing.Hash, jobs []*job) *prebuilder {
	pb := &prebuilder{jobs: make([]*prebuilt, len(jobs))}
	n := 0
	for i, j := range jobs {
		if j.err == nil && j.pre == nil {
			pb.jobs[i] = &prebuilt{build: j.build, done: make(chan struct{})}
			n++
		}
	}
	if n < 2 {
		return nil
	}
	for range min(runtime.GOMAXPROCS(0), n) {
		pb.wg.Add(1)
		go func() {
			defer pb.wg.Done()
			for {
				i := int(pb.next.Add(1)) - 1
				if i >= len(pb.jobs) {
					return
				}
				p := pb.jobs[i]
				if p == nil {
					continue
				}
				if !pb.stop.Load() {
					s := &Snapshot{r: r, commit: base, reads: &p.reads}
					p.change, p.err = p.build(s)
				} else {
					p.skipped = true
				}
				close(p.done)
			}
		}()
	}
	return pb
}

// take waits for job i's change; nil when it was not built ahead.
func (pb *prebuilder) take(i int) *prebuilt {
	if pb == nil || pb.jobs[i] == nil {
		return nil
	}
	p := pb.jobs[i]
	<-p.done
	if p.skipped {
		return nil
	}
	return p
}

// wait stops building ahead and waits for the builders still running: none may run
// after the chain that started them.
func (pb *prebuilder) wait() {
	if pb == nil {
		return
	}
	pb.stop.Store(true)
	pb.wg.Wait()
}
