// Command serveload measures serve's events per second through its HTTP API the way a
// fleet of Magnum conductors loads it: concurrent clients, each posting events for its own
// clusters and waiting for each answer, to a serve that pushes to a Git smart-HTTP remote
// with group commit on. It drives built binaries, so the same load runs against any
// commit's serve: give it several and it alternates between them, run after run, and
// prints one line per run in Go's benchmark format (benchstat reads them).
//
//	go build -o /tmp/mg-old ./cmd/magnum-gitops   # in a worktree of the older commit
//	go run ./hack/serveload -serve bin/magnum-gitops,/tmp/mg-old -runs 5
//
// Each run starts from a new remote (one commit) and a new serve, waits until serve is
// ready and its first resync is done, then times the clients from the first request to
// the last answer.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/magnum-gitops/magnum-gitops/internal/serveload"
)

// options are the command's flags.
type options struct {
	binaries  []string
	runs      int
	clients   int
	events    int
	clusters  int
	maxEvents int
	maxWait   time.Duration
	plaintext bool
	cacheDir  bool
	keep      bool
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	var binaries string
	fs := flag.NewFlagSet("serveload", flag.ContinueOnError)
	fs.StringVar(&binaries, "serve", "", "comma-separated magnum-gitops binaries to run serve from, alternated run by run (required)")
	fs.IntVar(&o.runs, "runs", 3, "runs of each binary")
	fs.IntVar(&o.clients, "clients", 32, "concurrent clients")
	fs.IntVar(&o.events, "events", 10, "events each client posts, one after the other")
	fs.IntVar(&o.clusters, "clusters", 1, "clusters of each client; its events go to them in turn")
	fs.IntVar(&o.maxEvents, "group-max-events", 0, "serve.group.max_events (0: serve's default)")
	fs.DurationVar(&o.maxWait, "group-max-wait", 0, "serve.group.max_wait (0: serve's default)")
	fs.BoolVar(&o.plaintext, "insecure-plaintext-secrets", false, "commit Secrets unencrypted (default: SOPS to a new age recipient, with a digest key)")
	fs.BoolVar(&o.cacheDir, "cache-dir", false, "set git.cache_dir (default: serve's default, none)")
	fs.BoolVar(&o.keep, "keep", false, "keep each run's directory (remote, clone, serve's log)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case binaries == "":
		return o, errors.New("-serve: no binary given")
	case o.runs < 1:
		return o, fmt.Errorf("-runs: %d is not positive", o.runs)
	case o.clients < 1:
		return o, fmt.Errorf("-clients: %d is not positive", o.clients)
	case o.events < 1:
		return o, fmt.Errorf("-events: %d is not positive", o.events)
	case o.clusters < 1:
		return o, fmt.Errorf("-clusters: %d is not positive", o.clusters)
	}
	for _, b := range strings.Split(binaries, ",") {
		abs, err := filepath.Abs(b)
		if err != nil {
			return o, fmt.Errorf("-serve: %w", err)
		}
		if _, err := os.Stat(abs); err != nil {
			return o, fmt.Errorf("-serve: %w", err)
		}
		o.binaries = append(o.binaries, abs)
	}
	return o, nil
}

// run alternates the binaries, o.runs rounds, and prints a line per run.
func run(ctx context.Context, o options) error {
	fmt.Printf("# %s, %d clients × %d events, %d cluster(s) each, plaintext %t, git.cache_dir %t\n",
		time.Now().UTC().Format(time.RFC3339), o.clients, o.events, o.clusters, o.plaintext, o.cacheDir)
	for round := 1; round <= o.runs; round++ {
		for _, bin := range o.binaries {
			res, err := once(ctx, o, bin)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", bin, round, err)
			}
			fmt.Printf("BenchmarkServeLoad/serve=%s\t%d\t%d ns/op\t%.1f events/s\t%.1f p50-ms\t%.1f p99-ms\t%.2f serve-cpu-ms/event\t%.1f events/group\t%.1f commit-ms\t%.1f push-ms\n",
				filepath.Base(bin), res.Events, res.Took.Nanoseconds()/int64(res.Events), res.Rate(), ms(res.P50), ms(res.P99),
				res.cpuMS, res.perGroup, res.commitMS, res.pushMS)
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// once is one run of one binary: a new remote, a new serve, the load. The run's
// directory stays when the run fails (or with -keep), for serve's log.
func once(ctx context.Context, o options, bin string) (res measured, err error) {
	dir, err := os.MkdirTemp("", "serveload-")
	if err != nil {
		return measured{}, err
	}
	defer func() {
		if o.keep || err != nil {
			fmt.Fprintln(os.Stderr, "serveload: run directory", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	remote, err := startRemote(filepath.Join(dir, "remote"))
	if err != nil {
		return measured{}, err
	}
	defer remote.Close()
	s, err := startServe(ctx, bin, dir, remote.URL, o)
	if err != nil {
		return measured{}, err
	}
	defer s.stop()
	cpu0, err := cpuTime(s.cmd.Process.Pid)
	if err != nil {
		return measured{}, err
	}
	r, err := serveload.Load(ctx, s.target, serveload.Options{Clients: o.clients, Events: o.events, Clusters: o.clusters})
	if err != nil {
		return measured{}, err
	}
	cpu1, err := cpuTime(s.cmd.Process.Pid)
	if err != nil {
		return measured{}, err
	}
	m, err := serveload.Metrics(ctx, s.target.URL)
	if err != nil {
		return measured{}, err
	}
	mean := func(name, labels string) float64 {
		if n := m[name+"_count"+labels]; n > 0 {
			return m[name+"_sum"+labels] / n
		}
		return 0
	}
	return measured{Result: r, cpuMS: float64((cpu1 - cpu0).Milliseconds()) / float64(r.Events), perGroup: mean("magnum_gitops_group_size", ""),
		commitMS: 1000 * mean("magnum_gitops_step_duration_seconds", `{step="commit"}`),
		pushMS:   1000 * mean("magnum_gitops_step_duration_seconds", `{step="push"}`)}, nil
}

// measured is a run's result with serve's CPU time an event, and what serve's metrics say
// of it: the mean events a group, and the mean commit and push step of an event.
type measured struct {
	serveload.Result
	cpuMS, perGroup, commitMS, pushMS float64
}
