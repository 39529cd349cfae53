package service_test

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
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
func remoteSpans(path, remote string) ([]time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pushes := map[string]bool{}      // receive-pack sessions of remote
	unpack := map[string]time.Time{} // session → start of its pack reader
	exits := map[string]time.Time{}  // session → exit of receive-pack
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
			if i := strings.LastIndexByte(e.SID, '/'); i > 0 && (slices.Contains(e.Argv, "index-pack") || slices.Contains(e.Argv, "unpack-objects")) {
				unpack[e.SID[:i]] = e.Time
			}
		case "exit":
			exits[e.SID] = e.Time
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var spans []time.Duration
	for sid := range pushes {
		start, ok := unpack[sid]
		end, done := exits[sid]
		if ok && done {
			spans = append(spans, end.Sub(start))
		}
	}
	return spans, nil
}
