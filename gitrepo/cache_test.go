package gitrepo_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// looseObject returns the file of a loose object in a bare repository.
func looseObject(dir, hash string) string {
	return filepath.Join(dir, "objects", hash[:2], hash[2:])
}

// objectFile returns the file that holds an object in a bare repository: its loose file,
// or the pack whose index lists it (a clone on disk keeps what it pushed as packs).
func objectFile(t *testing.T, dir, hash string) string {
	t.Helper()
	if p := looseObject(dir, hash); fileExists(p) {
		return p
	}
	idx, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "pack-*.idx"))
	for _, f := range idx {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "show-index")
		cmd.Stdin = strings.NewReader(string(data))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git show-index < %s: %v", f, err)
		}
		if strings.Contains(string(out), " "+hash+" ") {
			return strings.TrimSuffix(f, ".idx") + ".pack"
		}
	}
	t.Fatalf("object %s is in no file of %s", hash, dir)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestCacheDirHeals: whatever state a crash or a disk left the cache in, Open and Apply
// still work — the damaged clone is discarded and fetched again from the remote, and the
// Warn hook hears about it. Files in the cache directory that are not Git's are kept.
func TestCacheDirHeals(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	cases := []struct {
		name   string
		damage func(t *testing.T, cache, head string)
	}{
		{"empty ref file", func(t *testing.T, cache, _ string) {
			os.WriteFile(filepath.Join(cache, "refs", "remotes", "origin", "main"), nil, 0o644)
		}},
		{"garbage packed-refs", func(t *testing.T, cache, _ string) {
			os.WriteFile(filepath.Join(cache, "packed-refs"), []byte("garbage\x00 not a ref line\n"), 0o644)
		}},
		{"missing head commit", func(t *testing.T, cache, head string) {
			if err := os.Remove(objectFile(t, cache, head)); err != nil {
				t.Fatal(err)
			}
		}},
		{"corrupt head commit", func(t *testing.T, cache, head string) {
			p := objectFile(t, cache, head)
			os.Chmod(p, 0o644)
			os.WriteFile(p, []byte("not zlib, not a pack"), 0o644)
		}},
		{"missing pack index", func(t *testing.T, cache, _ string) {
			idx, _ := filepath.Glob(filepath.Join(cache, "objects", "pack", "*.idx"))
			for _, f := range idx {
				os.Remove(f)
			}
		}},
		{"truncated pack index", func(t *testing.T, cache, _ string) {
			idx, _ := filepath.Glob(filepath.Join(cache, "objects", "pack", "*.idx"))
			for _, f := range idx {
				os.Chmod(f, 0o644)
				os.Truncate(f, 100)
			}
		}},
		{"truncated config", func(t *testing.T, cache, _ string) {
			os.WriteFile(filepath.Join(cache, "config"), []byte("[remote \"origin\"\n\turl = "), 0o644)
		}},
		{"clone of another remote", func(t *testing.T, cache, _ string) {
			git(t, cache, "config", "remote.origin.url", "https://elsewhere.example.org/other.git")
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := s.newRepo(fmt.Sprintf("heal-%d", i), true)
			o := testOptions(url)
			o.CacheDir = t.TempDir()
			os.WriteFile(filepath.Join(o.CacheDir, "NOTES.txt"), []byte("not git's"), 0o644)
			r := open(t, o)
			res, err := r.Apply(context.Background(), change("first", map[string]string{"c/a.yaml": "a"}))
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, o.CacheDir, res.Commit.String())

			var mu sync.Mutex
			var warnings []string
			o.Warn = func(msg string) { mu.Lock(); warnings = append(warnings, msg); mu.Unlock() }
			r2, err := gitrepo.Open(context.Background(), o)
			if err != nil {
				t.Fatalf("Open on a damaged cache: %v", err)
			}
			if _, err := r2.Apply(context.Background(), change("second", map[string]string{"c/b.yaml": "b"})); err != nil {
				t.Fatalf("Apply after healing: %v", err)
			}
			if got, ok, err := r2.ReadFile("c/a.yaml"); err != nil || !ok || string(got) != "a" {
				t.Errorf("ReadFile after healing: %q %v %v", got, ok, err)
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], "discarding it") {
				t.Errorf("warnings = %q, want one about discarding the clone", warnings)
			}
			if b, err := os.ReadFile(filepath.Join(o.CacheDir, "NOTES.txt")); err != nil || string(b) != "not git's" {
				t.Errorf("healing removed a file that is not Git's: %v", err)
			}
			// The healed cache is a good cache: the next Open has nothing to say.
			warnings = nil
			open(t, o)
			if len(warnings) != 0 {
				t.Errorf("healed cache still damaged: %q", warnings)
			}
			onlyFastForwards(t, s.dir(fmt.Sprintf("heal-%d", i)), "main")
		})
	}
}

// TestDamageFoundByReaderHealsOnNextWrite: an object lost while the Repo runs makes a read
// fail; the next writer discards the clone and fetches it again.
func TestDamageFoundByReaderHealsOnNextWrite(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	o := testOptions(s.newRepo("heal-live", true))
	o.CacheDir = t.TempDir()
	var warned int
	o.Warn = func(string) { warned++ }
	r := open(t, o)
	ctx := context.Background()
	if _, err := r.Apply(ctx, change("blob", map[string]string{"c/a.yaml": "unique content 1"})); err != nil {
		t.Fatal(err)
	}
	blob := strings.TrimSpace(git(t, s.dir("heal-live"), "rev-parse", "main:c/a.yaml"))
	if err := os.Remove(objectFile(t, o.CacheDir, blob)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.ReadFile("c/a.yaml"); err == nil {
		t.Fatal("reading a lost object succeeded")
	}
	if _, err := r.Apply(ctx, change("next", map[string]string{"c/b.yaml": "b"})); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := r.ReadFile("c/a.yaml"); err != nil || !ok || string(got) != "unique content 1" {
		t.Errorf("after healing: %q %v %v", got, ok, err)
	}
	if warned != 1 {
		t.Errorf("%d warnings, want 1", warned)
	}
	// A ref emptied under a running Repo: the next write heals before it builds.
	os.WriteFile(filepath.Join(o.CacheDir, "refs", "remotes", "origin", "main"), nil, 0o644)
	if _, err := applyGroup(ctx, r, []gitrepo.Planned{static(change("after", map[string]string{"c/c.yaml": "c"}))}); err != nil {
		t.Fatal(err)
	}
	if got, _ := fileAt(t, s.dir("heal-live"), "main", "c/b.yaml"); string(got) != "b" || warned != 2 {
		t.Errorf("after an emptied ref: c/b.yaml = %q, %d warnings", got, warned)
	}
}

// TestHelperCacheWriterProcess applies changes in a loop with a cache dir, printing each
// landed path, until it is killed (by TestCacheDirSurvivesKill).
func TestHelperCacheWriterProcess(t *testing.T) {
	url, cache := os.Getenv("GITREPO_CRASH_URL"), os.Getenv("GITREPO_CRASH_CACHE")
	if url == "" {
		t.Skip("helper process for TestCacheDirSurvivesKill")
	}
	o := testOptions(url)
	o.CacheDir = cache
	o.MaxAttempts = 100
	o.Warn = func(msg string) { fmt.Println("warn", strings.ReplaceAll(msg, "\n", " ")) }
	r, err := gitrepo.Open(context.Background(), o)
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(3)
	}
	for i := 0; ; i++ {
		p := fmt.Sprintf("crash/%d/%d.yaml", os.Getpid(), i)
		var err error
		if i%2 == 0 {
			_, err = r.Apply(context.Background(), change("crash "+p, map[string]string{p: p}))
		} else {
			_, err = applyGroup(context.Background(), r, []gitrepo.Planned{static(change("crash "+p, map[string]string{p: p}))})
		}
		if err != nil {
			fmt.Println("apply failed:", err)
			os.Exit(4)
		}
		fmt.Println("landed", p)
	}
}

// TestCacheDirSurvivesKill SIGKILLs a writer with a cache dir at random moments, 15 times;
// every restart must open the cache (healing it if needed) and go on, every change a writer
// reported as landed is on the remote, and the remote passes git fsck --strict.
func TestCacheDirSurvivesKill(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("killed", true)
	cache := t.TempDir()
	var landed []string
	healed := 0
	for i := 0; i < 15; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCacheWriterProcess$")
		cmd.Env = append(os.Environ(), "GITREPO_CRASH_URL="+url, "GITREPO_CRASH_CACHE="+cache)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		time.Sleep(time.Duration(100+rand.IntN(700)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			if p, ok := strings.CutPrefix(l, "landed "); ok {
				landed = append(landed, p)
			} else if strings.HasPrefix(l, "warn ") {
				healed++
				t.Logf("run %d: %s", i, l)
			} else if strings.HasPrefix(l, "open failed") || strings.HasPrefix(l, "apply failed") {
				t.Errorf("run %d: %s", i, l)
			}
		}
		cmd.Wait()
	}
	o := testOptions(url)
	o.CacheDir = cache
	r := open(t, o)
	if _, err := r.Apply(context.Background(), change("after the crashes", map[string]string{"crash/done": "yes"})); err != nil {
		t.Fatal(err)
	}
	bare := s.dir("killed")
	checkRepo(t, bare)
	for _, p := range landed {
		if got, ok := fileAt(t, bare, "main", p); !ok || string(got) != p {
			t.Errorf("%s was reported as landed but is not on the remote", p)
		}
	}
	t.Logf("%d changes landed across 15 killed writers; the cache was healed %d times", len(landed), healed)
	onlyFastForwards(t, bare, "main")
}
