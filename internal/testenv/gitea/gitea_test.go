package gitea

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestLocate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		files  map[string]os.FileMode // relative path → mode; a trailing / makes a directory
		wantOK bool
	}{
		{"binary and options", map[string]os.FileMode{"gitea-" + Version: 0o755, "options-" + Version + "/locale/": 0}, true},
		{"no options", map[string]os.FileMode{"gitea-" + Version: 0o755}, false},
		{"options without locale", map[string]os.FileMode{"gitea-" + Version: 0o755, "options-" + Version + "/readme/": 0}, false},
		{"binary not executable", map[string]os.FileMode{"gitea-" + Version: 0o644, "options-" + Version + "/locale/": 0}, false},
		{"another version only", map[string]os.FileMode{"gitea-v1.25.0": 0o755, "options-v1.25.0/locale/": 0}, false},
		{"empty", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for p, mode := range tc.files {
				full := filepath.Join(dir, p)
				if p[len(p)-1] == '/' {
					if err := os.MkdirAll(full, 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.WriteFile(full, []byte("#!/bin/sh\n"), mode); err != nil {
					t.Fatal(err)
				}
			}
			bin, options := locate(dir)
			if ok := bin != ""; ok != tc.wantOK {
				t.Fatalf("locate = %q, %q; want found=%v", bin, options, tc.wantOK)
			}
			if tc.wantOK && (bin != filepath.Join(dir, "gitea-"+Version) || options != filepath.Join(dir, "options-"+Version)) {
				t.Errorf("locate = %q, %q", bin, options)
			}
		})
	}
}

// TestStart runs the real server and checks that each user's token is that user's, with
// the rights the tests rely on.
func TestStart(t *testing.T) {
	t.Parallel()
	s := Start(t)
	for _, tc := range []struct {
		user  User
		admin bool
	}{{s.Ops, true}, {s.Reviewer, false}, {s.Bot, false}} {
		var me struct {
			Login   string `json:"login"`
			IsAdmin bool   `json:"is_admin"`
		}
		if err := s.Call(tc.user, http.MethodGet, "/user", nil, &me); err != nil {
			t.Fatal(err)
		}
		if me.Login != tc.user.Name || me.IsAdmin != tc.admin {
			t.Errorf("token of %s is %s (admin %v), want admin %v", tc.user.Name, me.Login, me.IsAdmin, tc.admin)
		}
	}
	wrong := s.Bot
	wrong.Token = "0123456789abcdef0123456789abcdef01234567"
	if err := s.Call(wrong, http.MethodGet, "/user", nil, nil); err == nil {
		t.Error("a made-up token was accepted")
	}
	r := s.CreateRepo(t, "start")
	if head := r.BranchHead("main"); len(head) != 40 {
		t.Errorf("main of a new repository = %q", head)
	}
}
