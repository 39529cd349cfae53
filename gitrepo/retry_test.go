package gitrepo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

const changesPerWriter = 50

// contendedOptions allow for starvation: under optimistic concurrency the writer that
// just pushed is the fastest to push again, so a loser may wait for several of its turns.
func contendedOptions(url string) gitrepo.Options {
	o := testOptions(url)
	o.MaxAttempts = 1000
	o.Backoff, o.MaxBackoff = 20*time.Millisecond, 800*time.Millisecond
	return o
}

// writeClusters applies changesPerWriter changes, each to its own cluster directory.
func writeClusters(ctx context.Context, url, writer string) error {
	r, err := gitrepo.Open(ctx, contendedOptions(url))
	if err != nil {
		return err
	}
	for i := 0; i < changesPerWriter; i++ {
		// Events arrive apart, not back to back: a short random gap also keeps the writer
		// that just pushed from winning every round.
		time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
		dir := fmt.Sprintf("clusters/%s/c%02d", writer, i)
		c := change(fmt.Sprintf("%s: cluster %d", writer, i), map[string]string{
			dir + "/helmrelease.yaml":   fmt.Sprintf("writer: %s\nn: %d\n", writer, i),
			dir + "/kustomization.yaml": "resources: [helmrelease.yaml]\n",
		})
		if _, err := r.Apply(ctx, c); err != nil {
			return fmt.Errorf("%s change %d: %w", writer, i, err)
		}
	}
	return nil
}

// TestHelperWriterProcess is a writer run as a separate process by TestConcurrentWriters.
func TestHelperWriterProcess(t *testing.T) {
	url, writer := os.Getenv("GITREPO_WRITER_URL"), os.Getenv("GITREPO_WRITER")
	if url == "" {
		t.Skip("helper process for TestConcurrentWriters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := writeClusters(ctx, url, writer); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentWriters: 4 goroutines and 4 processes each push 50 changes to different
// clusters of one remote while another writer and a "human" fight over one shared file.
// Every cluster change must land, the remote's reflog must show only fast-forwards, and
// every shared-file change must either land or come back as a conflict.
func TestConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	s := newGitServer(t)
	url := s.newRepo("shared", true)
	// Generous bounds: a loaded CI machine runs git http-backend slowly; the test still
	// stops by itself.
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(w string) {
			defer wg.Done()
			errs <- writeClusters(ctx, url, w)
		}(fmt.Sprintf("goroutine-%d", i))
	}
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(w string) {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperWriterProcess$", "-test.v")
			cmd.Env = append(os.Environ(), "GITREPO_WRITER_URL="+url, "GITREPO_WRITER="+w)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("%s: %v\n%s", w, err, out)
			}
		}(fmt.Sprintf("process-%d", i))
	}

	// The shared-file writer and a human editing the same file.
	var landed, conflicts []int
	wg.Add(2)
	go func() {
		defer wg.Done()
		r, err := gitrepo.Open(ctx, contendedOptions(url))
		if err != nil {
			errs <- err
			return
		}
		for i := 0; i < 20; i++ {
			_, err := r.Apply(ctx, change("shared "+strconv.Itoa(i), map[string]string{"shared/owner.yaml": "owner: writer\nversion: " + strconv.Itoa(i) + "\n"}))
			var ce *gitrepo.ConflictError
			switch {
			case err == nil:
				landed = append(landed, i)
			case errors.As(err, &ce) && errors.Is(err, gitrepo.ErrConflict):
				conflicts = append(conflicts, i)
				if err := r.Fetch(ctx); err != nil { // see the human's edit, then go on
					errs <- err
					return
				}
			default:
				errs <- fmt.Errorf("shared writer: %w", err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		o := contendedOptions(url)
		o.Author = gitrepo.Signature{Name: "A Human", Email: "human@example.org"}
		r, err := gitrepo.Open(ctx, o)
		if err != nil {
			errs <- err
			return
		}
		for i := 0; i < 10; i++ {
			time.Sleep(30 * time.Millisecond)
			if err := r.Fetch(ctx); err != nil {
				errs <- err
				return
			}
			if _, err := r.Apply(ctx, change("human edit", map[string]string{"shared/owner.yaml": "owner: human\nedit: " + strconv.Itoa(i) + "\n"})); err != nil && !errors.Is(err, gitrepo.ErrConflict) {
				errs <- fmt.Errorf("human: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}

	bare := s.dir("shared")
	clone := checkRepo(t, bare)
	for _, w := range []string{"goroutine-0", "goroutine-1", "goroutine-2", "goroutine-3", "process-0", "process-1", "process-2", "process-3"} {
		for i := 0; i < changesPerWriter; i++ {
			want := fmt.Sprintf("writer: %s\nn: %d\n", w, i)
			if got, ok := fileAt(t, bare, "main", fmt.Sprintf("clusters/%s/c%02d/helmrelease.yaml", w, i)); !ok || string(got) != want {
				t.Errorf("%s change %d lost", w, i)
			}
		}
	}
	// Every shared-file change that Apply reported as landed is in the history.
	log := git(t, clone, "log", "--format=%s", "--", "shared/owner.yaml")
	for _, i := range landed {
		if !strings.Contains(log, "shared "+strconv.Itoa(i)+"\n") {
			t.Errorf("shared change %d reported as pushed but not in the history", i)
		}
	}
	for _, i := range conflicts {
		if strings.Contains(log, "shared "+strconv.Itoa(i)+"\n") {
			t.Errorf("shared change %d reported as a conflict but pushed", i)
		}
	}
	n := onlyFastForwards(t, bare, "main")
	t.Logf("%d ref updates, shared file: %d landed, %d conflicts", n, len(landed), len(conflicts))
	if len(landed)+len(conflicts) != 20 {
		t.Errorf("shared writer: %d landed + %d conflicts, want 20", len(landed), len(conflicts))
	}
	if n < 400 {
		t.Errorf("%d ref updates on main, want at least the 400 cluster changes", n)
	}
}

// TestServerRestart stops the Git server in the middle of a loop of changes and starts it
// again: every change lands once the server is back.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("flaky", true)
	o := testOptions(url)
	o.MaxAttempts = 40
	r := open(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(150 * time.Millisecond)
		s.stop()
		time.Sleep(700 * time.Millisecond)
		s.restart()
	}()
	for i := 0; i < 30; i++ {
		if _, err := r.Apply(ctx, change(fmt.Sprintf("change %d", i), map[string]string{fmt.Sprintf("c/%d.yaml", i): "x"})); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	<-done
	bare := s.dir("flaky")
	checkRepo(t, bare)
	for i := 0; i < 30; i++ {
		if _, ok := fileAt(t, bare, "main", fmt.Sprintf("c/%d.yaml", i)); !ok {
			t.Errorf("change %d lost", i)
		}
	}
	onlyFastForwards(t, bare, "main")
}

// TestServerGone: with the server down for good, Apply gives up after MaxAttempts.
func TestServerGone(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	o := testOptions(s.newRepo("gone", true))
	o.MaxAttempts = 3
	r := open(t, o)
	s.stop()
	_, err := r.Apply(context.Background(), change("x", map[string]string{"a": "1"}))
	if !errors.Is(err, gitrepo.ErrTooManyAttempts) {
		t.Errorf("err = %v, want ErrTooManyAttempts", err)
	}
}
