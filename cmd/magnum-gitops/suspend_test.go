package main

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSuspend: suspend and resume, one step after the other on one repository, as an
// operator runs them: suspend commits spec.suspend: true and the record's suspension; a
// second suspend commits nothing and says so; a later event and a resync under new
// settings keep the suspension; resume commits its removal, a second one nothing. An
// unknown cluster, a project it is not in, a reason of two lines, a kind that is not
// "cluster" or a cluster being deleted exits 2 and commits nothing.
func TestSuspend(t *testing.T) {
	cfg, remote := committingConfig(t)
	base, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", remote}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if _, _, err := run(t, "", "apply", "-f", fixture, "--config", cfg); err != nil {
		t.Fatal(err)
	}
	const (
		dir    = "clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/prod-a-2b7xq4mzkd5h/"
		uuid   = "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"
		expect = "\n  suspend: true\n"
	)
	for _, tc := range []struct {
		name string
		args []string
		// before, when set, runs first.
		before func(t *testing.T)
		exit   int
		commit bool
		// says is in the output (stdout, then stderr or the error); suspended is whether
		// the HelmRelease says suspend: true after.
		says      string
		suspended bool
	}{
		{name: "suspend", args: []string{"suspend", "cluster", "prod-a", "--reason", "INC-1234: repairing the control plane"},
			commit: true, says: "magnum-gitops: suspend cluster prod-a (prod-a-2b7xq4mzkd5h) in project 9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c", suspended: true},
		{name: "suspend a suspended cluster", args: []string{"suspend", "cluster", uuid, "--reason", "again"},
			says: "is already suspended (INC-1234: repairing the control plane): nothing to commit", suspended: true},
		{name: "a later event", args: []string{"apply", "-f", "../../fixtures/events/02-prod-a-resize-workers.yaml"},
			commit: true, says: `"operation": "resize_cluster"`, suspended: true},
		{name: "a resync under new settings", args: []string{"resync"}, commit: true, says: "1 clusters changed", suspended: true,
			before: func(t *testing.T) {
				if err := os.WriteFile(cfg, append(base, "flux:\n  timeout: 9m\n"...), 0o600); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "unknown cluster", args: []string{"suspend", "cluster", "prod-z"}, exit: 2,
			says: "cluster prod-z: no such cluster in the repository", suspended: true},
		{name: "not in that project", args: []string{"resume", "cluster", "prod-a", "--project", "0000"}, exit: 2,
			says: "cluster prod-a in project 0000: no such cluster", suspended: true},
		{name: "a reason of two lines", args: []string{"resume", "cluster", "prod-a", "--reason", "done\nMagnum-Operation: delete_cluster"}, exit: 2,
			says: "reason: one line", suspended: true},
		{name: "another kind", args: []string{"suspend", "helmrelease", "prod-a-2b7xq4mzkd5h"}, exit: 2,
			says: `unknown kind "helmrelease"`, suspended: true},
		{name: "no cluster named", args: []string{"resume", "cluster"}, exit: 2, says: "accepts 1 arg", suspended: true},
		{name: "resume", args: []string{"resume", "cluster", "prod-a-2b7xq4mzkd5h", "--project", "9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"},
			commit: true, says: "magnum-gitops: resume cluster prod-a (prod-a-2b7xq4mzkd5h)"},
		{name: "resume a cluster not suspended", args: []string{"resume", "cluster", "prod-a"}, says: "is not suspended: nothing to commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before(t)
			}
			head := strings.TrimSpace(git("rev-parse", "main"))
			stdout, stderr, err := run(t, "", append(tc.args, "--config", cfg)...)
			code := 0
			if err != nil {
				code = exitCode(io.Discard, err)
			}
			if code != tc.exit {
				t.Fatalf("exit %d (%v), want %d\n%s%s", code, err, tc.exit, stdout, stderr)
			}
			if out := stdout + stderr + errString(err); !strings.Contains(out, tc.says) {
				t.Errorf("the output does not say %q:\n%s", tc.says, out)
			}
			if committed := strings.TrimSpace(git("rev-parse", "main")) != head; committed != tc.commit {
				t.Errorf("committed %v, want %v", committed, tc.commit)
			}
			if tc.commit && tc.args[0] != "apply" && tc.args[0] != "resync" {
				if n := strings.Count(git("rev-list", head+"..main"), "\n"); n != 1 {
					t.Errorf("%d commits, want one", n)
				}
			}
			hr, record := git("show", "main:"+dir+"helmrelease.yaml"), git("show", "main:"+dir+"magnum-cluster.yaml")
			if got := strings.Contains(hr, expect); got != tc.suspended {
				t.Errorf("HelmRelease suspended %v, want %v:\n%s", got, tc.suspended, hr)
			}
			if got := strings.Contains(record, `"suspended"`); got != tc.suspended {
				t.Errorf("record suspended %v, want %v:\n%s", got, tc.suspended, record)
			}
		})
	}
	hr := git("show", "main:"+dir+"helmrelease.yaml")
	if !strings.Contains(hr, "machineCount: 5") || !strings.Contains(hr, "timeout: 9m0s") {
		t.Errorf("the resize or the resync under way while suspended is not in the HelmRelease:\n%s", hr)
	}

	// A cluster being deleted (its HelmRelease gone, its Secrets not yet) is refused.
	if _, _, err := run(t, "", "apply", "-f", "../../fixtures/events/08-prod-a-delete.yaml", "--config", cfg); err != nil {
		t.Fatal(err)
	}
	head := git("rev-parse", "main")
	_, _, err = run(t, "", "suspend", "cluster", "prod-a", "--config", cfg)
	if err == nil || exitCode(io.Discard, err) != 2 || !strings.Contains(err.Error(), "being deleted") || git("rev-parse", "main") != head {
		t.Errorf("suspending a cluster being deleted: %v, want exit 2 saying so and no commit", err)
	}
	log := git("log", "--format=%B", "main")
	for _, want := range []string{"Reason: INC-1234: repairing the control plane", "Magnum-Suspend: true", "Magnum-Suspend: false", "Magnum-Cluster-UUID: " + uuid} {
		if !strings.Contains(log, want) {
			t.Errorf("the history does not say %q:\n%s", want, log)
		}
	}
}

// errString is an error's message, "" for none.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
