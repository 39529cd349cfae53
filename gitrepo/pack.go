package gitrepo

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // the pack format's trailer is SHA-1

	"github.com/klauspost/compress/zlib"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/utils/binary"
)

// newObject is an object a commit wrote, with its content, and, when it took the place of
// another object at the same path, that object (zero for a new path and for commits).
// Successive versions of one path are nearly identical — a group's sixty rewrites of the
// 20 KB namespace list differ in one entry each — so the path, not the size, tells the
// pack which object a delta should be taken against. The content travels with the hash so
// the pack can be written on another goroutine without reading the store.
type newObject struct {
	hash, prev plumbing.Hash
	typ        plumbing.ObjectType
	data       []byte
}

// smallObject is the size below which an object is stored as it is: neither a delta nor
// compressed. Commits, small trees and short files save a few hundred bytes at most, and
// each compressed entry costs a Huffman table; the pack's bytes matter less than its CPU.
const smallObject = 512

// packHeader is the length of a pack's header: signature, version and object count.
const packHeader = 12

// packer writes a version 2 pack as objects come, a commit's worth at a time, so a chain
// can be packed while it is built. Each object goes in once, in the order given. An object
// whose path had an earlier version in the same pack is stored as an offset delta against
// the first version of that path in the pack, which is stored whole: every delta is one
// step from its base (depth 1) and costs one diff, where go-git's encoder tries a window
// of candidates by size for every object and compresses each wide tree whole when that
// finds nothing better. The pack is never thin: every base is in it.
type packer struct {
	body  bytes.Buffer // the entries, which follow the header
	count int
	at    map[plumbing.Hash]packed
	trees map[plumbing.Hash]map[string]span // the entries of roots that are trees
	// Level 1: the remote inflates at the same cost whatever the level, and a group packs
	// in a quarter less time than at the default level for a pack ~5 % larger
	// (BenchmarkPack). One writer of each kind serves every entry. klauspost's zlib
	// writes the same format as the standard library's for a sixth less CPU, the pack
	// 0.5 % larger.
	z, stored *zlib.Writer
}

// packed is where an object went in the pack and the first version of its path there
// (root), whose type and content a delta is taken against.
type packed struct {
	offset int64
	root   plumbing.Hash
	typ    plumbing.ObjectType
	data   []byte // set for objects stored whole
}

func newPacker() *packer {
	p := &packer{at: map[plumbing.Hash]packed{}, trees: map[plumbing.Hash]map[string]span{}}
	p.z, _ = zlib.NewWriterLevel(&p.body, zlib.BestSpeed)
	p.stored, _ = zlib.NewWriterLevel(&p.body, zlib.NoCompression)
	return p
}

// add appends objects; one already in the pack (two changes of a group writing the same
// content) is not packed again.
func (p *packer) add(objects []newObject) {
	for _, o := range objects {
		if _, dup := p.at[o.hash]; dup {
			continue
		}
		p.count++
		offset := packHeader + int64(p.body.Len())
		if prev, ok := p.at[o.prev]; ok && len(o.data) >= smallObject {
			if root := p.at[prev.root]; root.typ == o.typ { // a path can change kind
				if delta := p.delta(prev.root, root, o); len(delta) < len(o.data)/2 {
					p.at[o.hash] = packed{offset: offset, root: prev.root}
					p.ofsDelta(offset-root.offset, delta)
					continue
				}
			}
		}
		p.at[o.hash] = packed{offset: offset, root: o.hash, typ: o.typ, data: o.data}
		p.entry(o.typ, o.data)
	}
}

// delta is o as a delta against root (hash h), its path's first version in the pack.
// Trees are diffed entry by entry, with root's entries indexed once for all its
// successors.
func (p *packer) delta(h plumbing.Hash, root packed, o newObject) []byte {
	if o.typ == plumbing.TreeObject {
		index, ok := p.trees[h]
		if !ok {
			index = treeIndex(root.data)
			p.trees[h] = index
		}
		if index != nil {
			if d := treeDelta(root.data, index, o.data); d != nil {
				return d
			}
		}
	}
	return packfile.DiffDelta(root.data, o.data)
}

// bytes returns the finished pack: header, entries and the SHA-1 trailer.
func (p *packer) bytes() []byte {
	n := p.count
	pack := make([]byte, 0, packHeader+p.body.Len()+sha1.Size)
	pack = append(pack, 'P', 'A', 'C', 'K', 0, 0, 0, 2, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	pack = append(pack, p.body.Bytes()...)
	sum := sha1.Sum(pack) //nolint:gosec // the format's checksum
	return append(pack, sum[:]...)
}

// packing packs a chain's objects on a goroutine of its own while the chain is built:
// packing took a third of the CPU a group's commits cost, on one core while another sat
// idle. add hands over a commit's objects, which must not change afterwards.
type packing struct {
	in   chan []newObject
	done chan struct{}
	p    *packer
}

func startPacking() *packing {
	k := &packing{in: make(chan []newObject, 128), done: make(chan struct{}), p: newPacker()}
	go func() {
		defer close(k.done)
		for objects := range k.in {
			k.p.add(objects)
		}
	}()
	return k
}

func (k *packing) add(objects []newObject) { k.in <- objects }

// finish waits for what was handed over and returns the pack and its object count.
func (k *packing) finish() ([]byte, int) {
	close(k.in)
	<-k.done
	return k.p.bytes(), k.p.count
}

// entry writes an object whole. Writes to the body cannot fail.
func (p *packer) entry(typ plumbing.ObjectType, data []byte) {
	p.typeAndSize(typ, len(data))
	p.deflate(data)
}

// ofsDelta writes a delta against the entry back bytes before this one.
func (p *packer) ofsDelta(back int64, delta []byte) {
	p.typeAndSize(plumbing.OFSDeltaObject, len(delta))
	_ = binary.WriteVariableWidthInt(&p.body, back)
	p.deflate(delta)
}

// typeAndSize is an entry's header: the type in bits 4-6 of the first byte and the size
// in little-endian groups of 4, then 7 bits, the high bit saying more follow.
func (p *packer) typeAndSize(typ plumbing.ObjectType, size int) {
	var b [10]byte
	c := byte(typ)<<4 | byte(size&0x0f)
	size >>= 4
	n := 0
	for size > 0 {
		b[n] = c | 0x80
		n++
		c = byte(size & 0x7f)
		size >>= 7
	}
	b[n] = c
	p.body.Write(b[:n+1])
}

func (p *packer) deflate(data []byte) {
	z := p.z
	if len(data) < smallObject {
		z = p.stored
	}
	z.Reset(&p.body)
	_, _ = z.Write(data)
	_ = z.Close()
}
