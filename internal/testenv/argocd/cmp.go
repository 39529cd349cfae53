package argocd

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// The config-management plugin that decrypts SOPS files (issue 48): argocd-cmp-server,
// run beside the repo-server as the sidecar of a deployed Argo CD is, with the plugin an
// operator installs, deploy/argocd/sops-plugin.yaml, as it is.
const (
	cmpServerName = "argocd-cmp-server"
	// SOPSPlugin is the plugin's name: an Application uses it with source.plugin.name.
	SOPSPlugin = "sops"
	// SOPSVersion is the sops release hack/sops.sh builds; its cache directory is named after it.
	SOPSVersion = "v3.13.3"
	// pluginFile is the operators' ConfigMap holding the plugin, relative to the repository root.
	pluginFile = "deploy/argocd/sops-plugin.yaml"
	// pluginKey is the ConfigMap key the sidecar mounts as its plugin.yaml.
	pluginKey = "plugin.yaml"
)

// sopsBinDir is where to look for the sops CLI: $SOPS_BIN (the directory hack/sops.sh
// prints on its last line), else the cache it builds into.
func sopsBinDir() string { return testenv.BinDir("SOPS_BIN", "sops", SOPSVersion) }

// cmpPlugin is a ConfigManagementPlugin as argocd-cmp-server reads it from its plugin.yaml.
type cmpPlugin struct {
	// raw is the plugin.yaml, byte for byte.
	raw []byte
	// generate is the generate command with its arguments, as the server runs it in the
	// Application's source directory.
	generate []string
}

// pluginConfig reads the plugin.yaml of the ConfigMap in file, checking that it is the
// plugin named want: a ConfigManagementPlugin with a generate command and no version.
// argocd-cmp-server checks the kind, name and command at start; here a broken file fails
// with the file's name first.
func pluginConfig(file, want string) (*cmpPlugin, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.UnmarshalStrict(data, cm); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if cm.Kind != "ConfigMap" {
		return nil, fmt.Errorf("%s: kind %q, want a ConfigMap", file, cm.Kind)
	}
	plugin, ok := cm.Data[pluginKey]
	if !ok {
		return nil, fmt.Errorf("%s: no data key %s", file, pluginKey)
	}
	var cfg struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version  string `json:"version"`
			Generate struct {
				Command []string `json:"command"`
				Args    []string `json:"args"`
			} `json:"generate"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(plugin), &cfg); err != nil {
		return nil, fmt.Errorf("%s: data.%s: %w", file, pluginKey, err)
	}
	switch {
	case cfg.Kind != "ConfigManagementPlugin":
		return nil, fmt.Errorf("%s: data.%s: kind %q, want ConfigManagementPlugin", file, pluginKey, cfg.Kind)
	case cfg.Metadata.Name != want:
		return nil, fmt.Errorf("%s: data.%s: metadata.name %q, want %q", file, pluginKey, cfg.Metadata.Name, want)
	case cfg.Spec.Version != "":
		// With a version the repo-server looks for <name>-<version>.sock, and
		// Applications would have to name the plugin so.
		return nil, fmt.Errorf("%s: data.%s: spec.version %q: Applications name the plugin %q without a version", file, pluginKey, cfg.Spec.Version, want)
	case len(cfg.Spec.Generate.Command) == 0:
		return nil, fmt.Errorf("%s: data.%s: spec.generate.command is empty", file, pluginKey)
	}
	return &cmpPlugin{raw: []byte(plugin), generate: append(cfg.Spec.Generate.Command, cfg.Spec.Generate.Args...)}, nil
}

// pluginsDir is where config-management plugins' sockets are: the pod's plugins volume,
// shared by the repo-server (which dials <name>.sock there) and each sidecar.
func (a *Argo) pluginsDir() string { return a.mkdir(repoServerName, "plugins") }

// startCMPServer runs argocd-cmp-server with the sops plugin, as the sidecar
// docs/management-cluster.md shows, and waits until its socket accepts connections.
// Its own directories stand for the sidecar's volumes:
//
//   - config/plugin.yaml: the plugin of deploy/argocd/sops-plugin.yaml (the ConfigMap the
//     sidecar mounts at /home/argocd/cmp-server/config/plugin.yaml), given by
//     --config-dir-path;
//   - ARGOCD_PLUGINSOCKFILEPATH: pluginsDir, where it makes sops.sock and the repo-server
//     looks (/home/argocd/cmp-server/plugins in both containers);
//   - TMPDIR and ARGOCD_CMP_WORKDIR: its own, where it unpacks each repository it is sent
//     (the sidecar's /tmp emptyDir, not the repo-server's);
//   - SOPS_AGE_KEY_FILE: the age identity, mode 0600 (the sops-age Secret's mount);
//   - PATH: the sops CLI's directory first (the sidecar image's sops), then the test's for
//     sh, find, sort and grep.
//
// Its log level is info whatever Options.LogLevel says: at debug argocd-cmp-server logs
// each command's output, which is the decrypted Secrets.
func (a *Argo) startCMPServer(sopsDir string) {
	t := a.t
	t.Helper()
	plugin, err := pluginConfig(filepath.Join(testenv.RepoRoot(), pluginFile), SOPSPlugin)
	if err != nil {
		t.Fatal(err)
	}
	confDir := a.mkdir(cmpServerName, "config")
	if err := os.WriteFile(filepath.Join(confDir, pluginKey), plugin.raw, 0o644); err != nil {
		t.Fatal(err)
	}
	keyFile := a.path(cmpServerName, "sops-age", "age.agekey")
	if err := os.WriteFile(keyFile, []byte(a.opts.AgeIdentity+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(a.pluginsDir(), SOPSPlugin+".sock")
	env := []string{
		"PATH=" + sopsDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + a.mkdir(cmpServerName, "home"),
		"TMPDIR=" + a.mkdir(cmpServerName, "tmp"),
		"ARGOCD_CMP_WORKDIR=" + a.mkdir(cmpServerName, "work"),
		"ARGOCD_PLUGINSOCKFILEPATH=" + a.pluginsDir(),
		"ARGOCD_CMP_SERVER_LOGFORMAT=text",
		"ARGOCD_CMP_SERVER_LOGLEVEL=info",
		"SOPS_AGE_KEY_FILE=" + keyFile,
	}
	p := a.launch(cmpServerName, filepath.Join(a.bin, cmpServerName), []string{"--config-dir-path", confDir}, env)
	a.waitSocket(p, sock)
}

// waitSocket polls a Unix socket until it accepts a connection, failing the test when the
// process exits first or readyTimeout passes.
func (a *Argo) waitSocket(p *process, sock string) {
	t := a.t
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited before listening on %s: %v\n%s", p.name, sock, p.err, p.tail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s within %s: %v\n%s", p.name, sock, readyTimeout, err, p.tail())
		}
	}
}

// FilesContaining lists the files under the harness's directory (every process's home,
// temporary and work directories, the repo-server's clones, Redis's directory, the logs)
// whose content holds any of needles. A directory its owner cannot list (the repo-server
// makes its clone root 0300) gets u+rx first, as the cleanup opens them. Use it to show a
// secret reached no disk.
func (a *Argo) FilesContaining(needles ...[]byte) []string {
	a.t.Helper()
	var found []string
	err := filepath.WalkDir(a.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // a temporary file removed while walking
			}
			return err
		}
		if d.IsDir() {
			fi, err := d.Info()
			if err != nil || fi.Mode().Perm()&0o500 == 0o500 {
				return err
			}
			return os.Chmod(p, fi.Mode().Perm()|0o500)
		}
		if !d.Type().IsRegular() {
			return nil // sockets
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				found = append(found, p)
				break
			}
		}
		return nil
	})
	if err != nil {
		a.t.Fatalf("reading %s: %v", a.dir, err)
	}
	return found
}

// LogsContaining names the processes whose log holds any of needles.
func (a *Argo) LogsContaining(needles ...[]byte) []string {
	a.t.Helper()
	var found []string
	for _, p := range a.procs {
		b, err := os.ReadFile(p.log)
		if err != nil {
			a.t.Fatalf("reading the log of %s: %v", p.name, err)
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				found = append(found, p.name)
				break
			}
		}
	}
	return found
}
