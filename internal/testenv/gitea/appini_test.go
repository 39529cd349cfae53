package gitea

import (
	"strings"
	"testing"
)

func TestAppINI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    iniConfig
		want []string // lines the file must hold
	}{
		{"root", iniConfig{Root: true, WorkPath: "/w", Port: 3001, LogDir: "/l"},
			[]string{"WORK_PATH = /w", "HTTP_PORT = 3001", "ROOT_URL = http://127.0.0.1:3001/", "ROOT_PATH = /l", "INSTALL_LOCK = true", "ALLOWED_HOST_LIST = loopback", "DB_TYPE = sqlite3"}},
		{"not root", iniConfig{WorkPath: "/x", Port: 4002, LogDir: "/m"},
			[]string{"WORK_PATH = /x", "HTTP_PORT = 4002", "HTTP_ADDR = 127.0.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ini := appINI(tc.c)
			lines := strings.Split(ini, "\n")
			if got := strings.HasPrefix(ini, "I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true\n"); got != tc.c.Root {
				t.Errorf("root line at the top: %v, want %v", got, tc.c.Root)
			}
			if !tc.c.Root && strings.Contains(ini, "I_AM_BEING_UNSAFE") {
				t.Error("the root override is set for a non-root run")
			}
			for _, w := range tc.want {
				if !contains(lines, w) {
					t.Errorf("no line %q in\n%s", w, ini)
				}
			}
			// The secrets Gitea would write back into the file are given, and differ
			// between two renderings.
			for _, k := range []string{"SECRET_KEY = ", "INTERNAL_TOKEN = ", "JWT_SECRET = ", "LFS_JWT_SECRET = "} {
				if v := value(lines, k); len(v) < 32 || v == value(strings.Split(appINI(tc.c), "\n"), k) {
					t.Errorf("%s%q: missing, short or not random", k, v)
				}
			}
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

func value(lines []string, prefix string) string {
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return ""
}
