package gitrepo

import (
	"bytes"

	"github.com/go-git/go-git/v5/plumbing"
)

// span is where one entry of an encoded tree lies: tree[start:end].
type span struct{ start, end int }

// treeIndex maps the names of an encoded tree's entries to their spans; nil when the tree
// is malformed.
func treeIndex(tree []byte) map[string]span {
	index := map[string]span{}
	if !treeEntries(tree, func(name []byte, s span) { index[string(name)] = s }) {
		return nil
	}
	return index
}

// treeEntries calls fn with the name and span of each entry of an encoded tree ("mode
// name\0" and a 20-byte hash); false when the tree is malformed.
func treeEntries(tree []byte, fn func(name []byte, s span)) bool {
	for i := 0; i < len(tree); {
		sp := bytes.IndexByte(tree[i:], ' ')
		nul := bytes.IndexByte(tree[i:], 0)
		end := i + nul + 1 + len(plumbing.Hash{})
		if sp < 0 || nul < sp || end > len(tree) {
			return false
		}
		fn(tree[i+sp+1:i+nul], span{i, end})
		i = end
	}
	return true
}

// treeDelta is a Git delta that makes target from base, two encoded trees, given base's
// index: every entry of target that base holds byte for byte is copied from base, the
// rest inserted. A group rewrites the namespace list, hundreds of entries, once per
// commit and changes one entry each time; matching entries by name finds the copies at a
// tenth of the cost of a general differ, which indexes base by hashing it whole on every
// call. nil when target is malformed.
func treeDelta(base []byte, index map[string]span, target []byte) []byte {
	d := appendSize(nil, len(base))
	d = appendSize(d, len(target))
	from, to := -1, -1 // a copy of base[from:to] not written yet
	lit := -1          // target[lit:at] are to be inserted
	flushCopy := func() {
		if from >= 0 {
			d = appendCopy(d, from, to-from)
			from = -1
		}
	}
	flushInsert := func(at int) {
		if lit >= 0 {
			d = appendInsert(d, target[lit:at])
			lit = -1
		}
	}
	ok := treeEntries(target, func(name []byte, s span) {
		b, found := index[string(name)]
		if !found || !bytes.Equal(base[b.start:b.end], target[s.start:s.end]) {
			flushCopy()
			if lit < 0 {
				lit = s.start
			}
			return
		}
		flushInsert(s.start)
		if from >= 0 && to == b.start {
			to = b.end
			return
		}
		flushCopy()
		from, to = b.start, b.end
	})
	if !ok {
		return nil
	}
	flushCopy()
	flushInsert(len(target))
	return d
}

// appendSize appends a delta header's size: 7 bits a byte, least significant first, the
// high bit saying more follow.
func appendSize(d []byte, n int) []byte {
	for n >= 0x80 {
		d = append(d, byte(n)|0x80)
		n >>= 7
	}
	return append(d, byte(n))
}

// appendCopy appends copy instructions for base[offset:offset+n], in pieces of at most
// 64 KiB as Git writes them: the opcode's low four bits say which offset bytes follow,
// the next three which size bytes.
func appendCopy(d []byte, offset, n int) []byte {
	for n > 0 {
		size := min(n, 0x10000)
		op := len(d)
		d = append(d, 0x80)
		for i := range 4 {
			if b := byte(offset >> (8 * i)); b != 0 {
				d[op] |= 1 << i
				d = append(d, b)
			}
		}
		if size != 0x10000 { // no size bytes means 64 KiB
			for i := range 3 {
				if b := byte(size >> (8 * i)); b != 0 {
					d[op] |= 0x10 << i
					d = append(d, b)
				}
			}
		}
		offset += size
		n -= size
	}
	return d
}

// appendInsert appends insert instructions for data, at most 127 bytes each.
func appendInsert(d, data []byte) []byte {
	for len(data) > 0 {
		n := min(len(data), 0x7f)
		d = append(d, byte(n))
		d = append(d, data[:n]...)
		data = data[n:]
	}
	return d
}
