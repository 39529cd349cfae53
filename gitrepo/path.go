package gitrepo

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidPath is wrapped by ValidPath's errors (and, through ErrInvalidChange, by a
// Change naming such a path).
var ErrInvalidPath = errors.New("gitrepo: invalid path")

// Limits on a path: most filesystems refuse longer names, so a longer path could be
// committed but never checked out.
const (
	maxPathBytes    = 4096
	maxSegmentBytes = 255
)

// ValidPath reports whether p may be written to a repository: a relative, clean,
// slash-separated path of valid UTF-8 with no control character or backslash, none of
// whose segments is empty, ".", "..", or a name that some checkout (case-insensitive,
// NTFS, HFS+) would resolve to ".git", ".gitmodules" or ".gitattributes". It mirrors Git's
// verify_path with core.protectNTFS and core.protectHFS on, as on every platform Git
// supports: a tree that a Windows or macOS client cannot check out safely is refused for
// everyone.
func ValidPath(p string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidPath, p, why) }
	switch {
	case p == "":
		return bad("empty")
	case len(p) > maxPathBytes:
		return bad(fmt.Sprintf("longer than %d bytes", maxPathBytes))
	case !utf8.ValidString(p):
		return bad("not valid UTF-8")
	case strings.HasPrefix(p, "/"):
		return bad("must be relative")
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c < 0x20 || c == 0x7f:
			return bad("contains a control character")
		case c == '\\':
			// A directory separator on Windows: "a\.git" would be a/.git there.
			return bad("contains a backslash")
		case strings.IndexByte(windowsReserved, c) >= 0:
			// Git for Windows refuses these on checkout; ':' also opens an NTFS stream
			// ("x:y" in any segment, a drive letter at the start). Refusing them in every
			// segment keeps a path and each of its tree entry names judged alike.
			return bad(fmt.Sprintf("contains %q, which Windows checkouts refuse", c))
		}
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "":
			return bad("has an empty segment")
		case seg == "." || seg == "..":
			return bad(fmt.Sprintf("has a %q segment", seg))
		case nameless(seg):
			return bad(fmt.Sprintf("has a segment %q with no name on some checkout", seg))
		case len(seg) > maxSegmentBytes:
			return bad(fmt.Sprintf("has a segment longer than %d bytes", maxSegmentBytes))
		case isDotGit(seg):
			return bad(fmt.Sprintf("segment %q would be .git on some checkout", seg))
		case isGitMetaFile(seg):
			return bad(fmt.Sprintf("segment %q would be a Git metadata file on some checkout", seg))
		}
	}
	return nil
}

// validName checks one tree entry name: what git fsck --strict refuses (empty, ".", "..",
// '/', NUL, .git in any spelling) and everything ValidPath refuses in a segment.
func validName(name string) error {
	if name == "" || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%w: tree entry name %q", ErrInvalidPath, name)
	}
	return ValidPath(name)
}

// nameless: Windows drops trailing spaces and periods and starts a stream name at ':',
// and HFS+ ignores some code points, so " ", "...", ":x" or ".\u200c." name nothing (or
// "..") on some checkout.
func nameless(seg string) bool {
	if i := strings.IndexByte(seg, ':'); i >= 0 {
		seg = seg[:i]
	}
	return strings.TrimFunc(seg, func(r rune) bool { return r == ' ' || r == '.' || hfsIgnorable(r) }) == ""
}

// windowsReserved are the characters Git for Windows refuses in a path (besides '\\').
const windowsReserved = `:<>"|?*`

// isDotGit reports whether a segment names the repository directory on NTFS or HFS+, or
// on both rules at once (HFS+'s ignored code points removed, then NTFS's): stricter than
// Git, which checks each file system alone, because nothing we write needs such a name.
func isDotGit(seg string) bool {
	return isNTFSDotGit(seg) || isHFSDot(seg, "git") || isNTFSDotGit(withoutHFSIgnorable(seg))
}

// isGitMetaFile reports whether a segment names .gitmodules or .gitattributes on NTFS or
// HFS+ (Git refuses them as symlinks; a generated tree has no business writing either).
func isGitMetaFile(seg string) bool {
	plain := withoutHFSIgnorable(seg)
	return isNTFSDot(seg, "gitmodules", "gi7eba") || isHFSDot(seg, "gitmodules") || isNTFSDot(plain, "gitmodules", "gi7eba") ||
		isNTFSDot(seg, "gitattributes", "gi7d29") || isHFSDot(seg, "gitattributes") || isNTFSDot(plain, "gitattributes", "gi7d29")
}

// withoutHFSIgnorable drops the code points HFS+ ignores.
func withoutHFSIgnorable(seg string) string {
	return strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, seg)
}

// isNTFSDotGit: ".git" or its 8.3 short name "git~1", case-insensitive, followed only by
// spaces and periods (which NTFS drops) or by ':' (an alternate data stream such as
// ".git::$INDEX_ALLOCATION").
func isNTFSDotGit(seg string) bool {
	var rest string
	switch {
	case len(seg) >= 4 && seg[0] == '.' && strings.EqualFold(seg[1:4], "git"):
		rest = seg[4:]
	case len(seg) >= 5 && strings.EqualFold(seg[:5], "git~1"):
		rest = seg[5:]
	default:
		return false
	}
	return onlySpacesAndPeriods(rest)
}

// isNTFSDot is Git's is_ntfs_dot_generic: "." + name, its short name (the first six
// characters of name, '~' and 1 to 4), or NTFS's fallback short name (shortPrefix, at most
// six characters of it, '~' and a number, eight characters in all), each optionally
// followed by spaces, periods or an alternate data stream.
func isNTFSDot(seg, name, shortPrefix string) bool {
	if len(seg) > len(name) && seg[0] == '.' && strings.EqualFold(seg[1:1+len(name)], name) {
		return onlySpacesAndPeriods(seg[1+len(name):])
	}
	if len(seg) >= 8 && strings.EqualFold(seg[:6], name[:6]) && seg[6] == '~' && seg[7] >= '1' && seg[7] <= '4' {
		return onlySpacesAndPeriods(seg[8:])
	}
	if len(seg) < 8 {
		return false
	}
	sawTilde := false
	i := 0
	for ; i < 8; i++ {
		c := seg[i]
		switch {
		case sawTilde:
			if c < '0' || c > '9' {
				return false
			}
		case c == '~':
			i++
			if i >= len(seg) || seg[i] < '1' || seg[i] > '9' {
				return false
			}
			sawTilde = true
		case i >= 6 || c >= 0x80:
			return false
		case asciiLower(c) != shortPrefix[i]:
			return false
		}
	}
	return onlySpacesAndPeriods(seg[i:])
}

func asciiLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// onlySpacesAndPeriods: what NTFS ignores at the end of a name; ':' starts a stream name.
func onlySpacesAndPeriods(rest string) bool {
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case ':':
			return true
		case ' ', '.':
		default:
			return false
		}
	}
	return true
}

// isHFSDot is Git's is_hfs_dot_generic: HFS+ ignores some Unicode code points when it
// compares names, so ".g\u200cit" is ".git" there. The comparison is case-insensitive.
func isHFSDot(seg, name string) bool {
	next := func() rune {
		for seg != "" {
			r, n := utf8.DecodeRuneInString(seg)
			seg = seg[n:]
			if !hfsIgnorable(r) {
				return r
			}
		}
		return 0
	}
	if next() != '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		r := next()
		if r > 127 || r == 0 || asciiLower(byte(r)) != name[i] {
			return false
		}
	}
	return next() == 0
}

// hfsIgnorable lists the code points HFS+ drops when comparing names (Git's
// next_hfs_char).
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, // zero-width non-joiner, joiner; LTR and RTL marks
		r >= 0x202a && r <= 0x202e, // directional embeddings and overrides
		r >= 0x206a && r <= 0x206f, // deprecated format characters
		r == 0xfeff:                // zero-width no-break space
		return true
	}
	return false
}
