package gitrepo_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestValidPath: every spelling of .git, .gitmodules and .gitattributes that some
// checkout (case-insensitive, NTFS, HFS+) resolves to the real thing is refused, in any
// segment, and so are the characters Git for Windows refuses; ordinary paths, including
// near misses, are accepted.
func TestValidPath(t *testing.T) {
	t.Parallel()
	refused := []string{
		"", "/abs", "a//b", "a/", "./a", "a/./b", "a/../b", "..", ".",
		".git", ".GIT", ".Git/config", "a/.git", "a/.git/b", "a/.GiT/b",
		"git~1", "GIT~1/config", "a/git~1",
		".git ", ".git.", ".git. . ", ".git::$INDEX_ALLOCATION", ".git:stream", "a/.git /b",
		".g\u200cit", ".\u200dgit", ".gi\u200et", ".git\u200f", "\ufeff.git", ".g\u202ait", ".g\u206fit", ".G\u200cIT",
		".gitmodules", ".GITMODULES", "a/.gitmodules", ".gitmodules ", ".gitmodules.", ".gitmodules::$DATA",
		"gitmod~1", "GITMOD~4", "gi7eba~1", "GI7EBA~9", "gi7eb~12", "gi7e~123",
		".gitm\u200codules", ".gitmodules\u200c",
		".gitattributes", ".GitAttributes", "a/b/.gitattributes", ".gitattributes .", "gitatt~1", "gi7d29~1",
		".gitattr\u200dibutes",
		"a\\.git", "a\\b", "c:/x", "C:x", "ab:c", "a/x::t /x", "a/b?", "a<b", "a>b", "a|b", "a*b", "a\"b",
		".g\u200cit::", ".g\u200cit .", ".gitm\u200codules::$DATA", "a\x00b", "a\nb", "a\x7fb", "a\tb",
		"a/\xff\xfe", " ", ":", "a/ :x", "\u200c ", ".\u200c.", "a/.../b", "a/. ./b", "...", strings.Repeat("a", 256), strings.Repeat("a/", 2100) + "a",
	}
	for _, p := range refused {
		if err := gitrepo.ValidPath(p); err == nil || !errors.Is(err, gitrepo.ErrInvalidPath) {
			t.Errorf("ValidPath(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	accepted := []string{
		"clusters/magnum/magnum-p1/prod-a-2b7x/helmrelease.yaml",
		"clusters/magnum/magnum-p1/namespace.yaml",
		"a", "a.git", "git", ".gitignore", ".github/workflows/ci.yaml", ".gits", ".git-credentials-not",
		"git~5", "git~1x", "gitmod~5", "gi7eba~0", "gitmodules", "x.gitmodules", ".gitmodule",
		".g\u200cx", "caf\u00e9/na\u00efve.yaml", "a b/c d", ".a", "a.", "-a", strings.Repeat("a", 255),
	}
	for _, p := range accepted {
		if err := gitrepo.ValidPath(p); err != nil {
			t.Errorf("ValidPath(%q) = %v, want nil", p, err)
		}
	}
}
