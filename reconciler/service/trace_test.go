package service_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// traceEvent is the part of a Git trace2 event (GIT_TRACE2_EVENT) remoteSpans reads.
type traceEvent struct {
	Event string    `json:"event"`
	SID   string    `json:"sid"`
	Time  time.Time `json:"time"`
	Argv  []string  `json:"argv"`
}

// remoteSpans reads a trace2 event file and returns, for each git receive-pack of the
// repository at remote, how long the remote worked on the pushed pack: from the start of
// the index-pack (or unpack-objects) that reads the pack as it arrives to the exit of
// receive-pack, after the connectivity check, the ref update and gc --auto. The time
// before — starting receive-pack, advertising refs, waiting for the pusher to pack — is
// the pusher's, not counted. A child's session id is its parent's, "/" and its own.
// Check is the part spent in the connectivity check: the rev-list receive-pack runs, which
// walks the trees of the old head, so it grows with the repository, not with the push.
func remoteSpans(path, remote string) ([]remoteSpan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pushes := map[string]bool{}      // receive-pack sessions of remote
	unpack := map[string]time.Time{} // session → start of its pack reader
	exits := map[string]time.Time{}  // session → exit of receive-pack
	checks := map[string]string{}    // session → its rev-list's session
	starts := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e traceEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, err
		}
		switch e.Event {
		case "start":
			if len(e.Argv) > 0 && strings.HasSuffix(e.Argv[0], "git-receive-pack") && slices.Contains(e.Argv, remote) {
				pushes[e.SID] = true
			}
			starts[e.SID] = e.Time
			if i := strings.LastIndexByte(e.SID, '/'); i > 0 && (slices.Contains(e.Argv, "index-pack") || slices.Contains(e.Argv, "unpack-objects")) {
				unpack[e.SID[:i]] = e.Time
			}
			if i := strings.LastIndexByte(e.SID, '/'); i > 0 && len(e.Argv) > 1 && e.Argv[1] == "rev-list" {
				checks[e.SID[:i]] = e.SID
			}
		case "exit":
			exits[e.SID] = e.Time
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var spans []remoteSpan
	for sid := range pushes {
		start, ok := unpack[sid]
		end, done := exits[sid]
		if !ok || !done {
			continue
		}
		span := remoteSpan{Total: end.Sub(start)}
		if c, ok := checks[sid]; ok {
			if end, ok := exits[c]; ok {
				span.Check = end.Sub(starts[c])
			}
		}
		spans = append(spans, span)
	}
	return spans, nil
}

// remoteSpan is the remote's work on one push, and the connectivity check's part of it.
type remoteSpan struct{ Total, Check time.Duration }

// TestRemoteSpans reads a trace of two pushes to the remote — one from go-git (a
// receive-pack of its own), one from the git CLI (receive-pack a child of git push), the
// first with index-pack, the second with unpack-objects — and one push to another
// repository, which is not counted.
func TestRemoteSpans(t *testing.T) {
	t.Parallel()
	lines := []string{
		`{"event":"start","sid":"A","time":"2026-11-23T10:00:00.000000Z","argv":["git-receive-pack","/r.git"]}`,
		`{"event":"start","sid":"A/B","time":"2026-11-23T10:00:00.030000Z","argv":["/usr/lib/git-core/git","index-pack","--stdin"]}`,
		`{"event":"exit","sid":"A/B","time":"2026-11-23T10:00:00.040000Z"}`,
		`{"event":"start","sid":"A/C","time":"2026-11-23T10:00:00.041000Z","argv":["/usr/lib/git-core/git","rev-list","--objects"]}`,
		`{"event":"start","sid":"P","time":"2026-11-23T10:00:00.050000Z","argv":["git","push","origin"]}`,
		`{"event":"start","sid":"P/D","time":"2026-11-23T10:00:00.055000Z","argv":["git-receive-pack","/r.git"]}`,
		`{"event":"exit","sid":"A/C","time":"2026-11-23T10:00:00.080000Z"}`,
		`{"event":"exit","sid":"A","time":"2026-11-23T10:00:00.090000Z"}`,
		`{"event":"start","sid":"P/D/E","time":"2026-11-23T10:00:00.100000Z","argv":["/usr/lib/git-core/git","unpack-objects","--pack_header=2,8"]}`,
		`{"event":"exit","sid":"P/D","time":"2026-11-23T10:00:00.125000Z"}`,
		`{"event":"start","sid":"F","time":"2026-11-23T10:00:01.000000Z","argv":["git-receive-pack","/other.git"]}`,
		`{"event":"start","sid":"F/G","time":"2026-11-23T10:00:01.010000Z","argv":["/usr/lib/git-core/git","index-pack","--stdin"]}`,
		`{"event":"exit","sid":"F","time":"2026-11-23T10:00:02.000000Z"}`,
	}
	file := filepath.Join(t.TempDir(), "trace.json")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spans, err := remoteSpans(file, "/r.git")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(spans, func(a, b remoteSpan) int { return int(a.Total - b.Total) })
	want := []remoteSpan{{Total: 25 * time.Millisecond}, {Total: 60 * time.Millisecond, Check: 39 * time.Millisecond}}
	if !slices.Equal(spans, want) {
		t.Errorf("spans %v, want %v", spans, want)
	}
}
