//go:build image

package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
)

// ociRuntime is a runc-compatible OCI runtime (runc, crun) with a state directory of the
// test's own.
type ociRuntime struct {
	bin, root string
}

// newRuntime finds OCI_RUNTIME (runc by default); it skips the test without it or
// without root (or fails it in CI).
func newRuntime(t *testing.T) *ociRuntime {
	t.Helper()
	name := os.Getenv("OCI_RUNTIME")
	if name == "" {
		name = "runc"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		unavailable(t, "no OCI runtime %s (apt-get install %s): %v", name, name, err)
	}
	if os.Geteuid() != 0 {
		unavailable(t, "the OCI runtime needs root")
	}
	return &ociRuntime{bin: bin, root: t.TempDir()}
}

// run runs the runtime with args and returns its output; it fails the test on error.
func (r *ociRuntime) run(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(r.bin, append([]string{"--root", r.root}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(r.bin), strings.Join(args, " "), err, out)
	}
	return out
}

// mount is a file or directory of the host the container sees: read-only, as a ConfigMap
// or Secret is, unless writable (an emptyDir).
type mount struct {
	host, container string
	writable        bool
}

// container is the image running under the runtime.
type container struct {
	rt   *ociRuntime
	id   string
	cmd  *exec.Cmd
	logs *leakcheck.Buffer
	done chan struct{}
	err  error // the runtime's exit, once done is closed
}

var containers atomic.Int64

// start unpacks img into a bundle of its own, writes the bundle's config.json from the
// runtime's own template and the image's configuration, and runs it in the foreground.
// args, when given, replace the image's command (as a Pod's args do). The container is
// killed and removed when the test ends.
func (r *ociRuntime) start(t *testing.T, img v1.Image, args []string, mounts []mount) *container {
	t.Helper()
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	if err := unpack(img, rootfs); err != nil {
		t.Fatalf("unpacking the image: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// The runtime's default configuration: its namespaces, masked paths, /proc, /dev.
	cmd := exec.Command(r.bin, "spec")
	cmd.Dir = bundle
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s spec: %v\n%s", r.bin, err, out)
	}
	specFile := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	if err := runtimeSpec(spec, cfg.Config, args, mounts); err != nil {
		t.Fatal(err)
	}
	data, err = json.MarshalIndent(spec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specFile, data, 0o600); err != nil {
		t.Fatal(err)
	}

	c := &container{rt: r, id: fmt.Sprintf("magnum-gitops-image-test-%d-%d", os.Getpid(), containers.Add(1)),
		logs: leakcheck.Log(t, "the container's output"), done: make(chan struct{})}
	c.cmd = exec.Command(r.bin, "--root", r.root, "run", "--bundle", bundle, c.id)
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = exec.Command(r.bin, "--root", r.root, "kill", c.id, "KILL").Run()
			select {
			case <-c.done:
			case <-time.After(30 * time.Second):
				_ = c.cmd.Process.Kill()
			}
		}
		_ = exec.Command(r.bin, "--root", r.root, "delete", "--force", c.id).Run()
	})
	return c
}

// runtimeSpec fills the runtime's template with the image's process and this test's
// mounts, as the Deployment's securityContext asks: the image's user, no capabilities, no
// new privileges, a read-only root; and the host's network.
func runtimeSpec(spec map[string]any, img v1.Config, args []string, mounts []mount) error {
	proc, ok := spec["process"].(map[string]any)
	if !ok {
		return errors.New("the runtime's template has no process")
	}
	if len(args) == 0 {
		args = img.Cmd
	}
	uid, gid, err := parseUser(img.User)
	if err != nil {
		return err
	}
	cwd := img.WorkingDir
	if cwd == "" {
		cwd = "/"
	}
	proc["args"] = append(append([]string{}, img.Entrypoint...), args...)
	proc["env"] = img.Env
	proc["cwd"] = cwd
	proc["terminal"] = false
	proc["user"] = map[string]any{"uid": uid, "gid": gid}
	proc["noNewPrivileges"] = true
	proc["capabilities"] = map[string]any{"bounding": []string{}, "effective": []string{}, "inheritable": []string{},
		"permitted": []string{}, "ambient": []string{}}
	spec["root"] = map[string]any{"path": "rootfs", "readonly": true}

	list, _ := spec["mounts"].([]any)
	// /tmp: an emptyDir in the Deployment, a tmpfs here.
	list = append(list, map[string]any{"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
		"options": []string{"nosuid", "nodev", "mode=1777", "size=65536k"}})
	for _, m := range mounts {
		opts := []string{"rbind", "nosuid", "nodev", "noexec"}
		if !m.writable {
			opts = append(opts, "ro")
		}
		list = append(list, map[string]any{"destination": m.container, "type": "bind", "source": m.host, "options": opts})
	}
	spec["mounts"] = list

	linux, ok := spec["linux"].(map[string]any)
	if !ok {
		return errors.New("the runtime's template has no linux section")
	}
	namespaces, _ := linux["namespaces"].([]any)
	var kept []any
	for _, n := range namespaces {
		if ns, _ := n.(map[string]any); ns["type"] != "network" {
			kept = append(kept, n)
		}
	}
	linux["namespaces"] = kept
	return nil
}

// parseUser reads a numeric UID:GID, the only form an image without /etc/passwd lookups
// in the runtime can be trusted with.
func parseUser(u string) (uid, gid int, err error) {
	a, b, ok := strings.Cut(u, ":")
	if uid, err = strconv.Atoi(a); err != nil || !ok {
		return 0, 0, fmt.Errorf("the image's user %q is not UID:GID", u)
	}
	if gid, err = strconv.Atoi(b); err != nil {
		return 0, 0, fmt.Errorf("the image's user %q is not UID:GID", u)
	}
	return uid, gid, nil
}

// pid is the container's first process, as the host sees it.
func (c *container) pid(t *testing.T) int {
	t.Helper()
	var state struct {
		Pid    int    `json:"pid"`
		Status string `json:"status"`
	}
	out := c.rt.run(t, "state", c.id)
	if err := json.Unmarshal(out, &state); err != nil || state.Status != "running" {
		t.Fatalf("%s state %s: %s (%v)", c.rt.bin, c.id, out, err)
	}
	return state.Pid
}

// signal sends a signal (TERM, KILL) through the runtime, as a kubelet's runtime does.
func (c *container) signal(t *testing.T, sig string) {
	t.Helper()
	c.rt.run(t, "kill", c.id, sig)
}

// wait waits for the container to end and returns its exit status.
func (c *container) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(timeout):
		t.Fatalf("the container did not end within %s:\n%s", timeout, c.logs)
	}
	var exit *exec.ExitError
	switch {
	case c.err == nil:
		return 0
	case errors.As(c.err, &exit):
		return exit.ExitCode()
	}
	t.Fatalf("%s run: %v\n%s", c.rt.bin, c.err, c.logs)
	return -1
}

// running reports whether the container has not ended yet.
func (c *container) running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}
