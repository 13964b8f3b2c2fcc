package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
)

// bbolt's on-disk constants (go.etcd.io/bbolt/internal/common), repeated
// here because bbolt does not export them and may panic or fault on files
// that violate them. They are part of bbolt's stable file format 2.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	pageHeaderSize  = 16 // id u64, flags u16, count u16, overflow u32
	metaSize        = 64 // magic..txid, then the checksum
	metaSumOffset   = 56 // the checksum covers meta bytes [0:56)
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	freelistFlag    = 0x10
	noFreelist      = ^uint64(0)
	minPageSize     = 512
	maxPageSize     = 1 << 20
	headerReadLimit = 0x1000 // bbolt reads page 0 with a 4 KiB buffer too
)

// boltMeta is the part of a bbolt meta page the header check needs.
type boltMeta struct {
	magic, version, pageSize uint32
	root, freelist, pgid     uint64
	txid, checksum           uint64
	sumOK                    bool
}

// parseMeta decodes a meta page (header included) from b, which must hold at
// least pageHeaderSize+metaSize bytes. bbolt writes its structs in native
// byte order, so a file is only portable between machines of one endianness.
func parseMeta(b []byte) boltMeta {
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	le := binary.NativeEndian
	h := fnv.New64a()
	h.Write(m[:metaSumOffset])
	bm := boltMeta{
		magic:    le.Uint32(m[0:]),
		version:  le.Uint32(m[4:]),
		pageSize: le.Uint32(m[8:]),
		root:     le.Uint64(m[16:]),
		freelist: le.Uint64(m[32:]),
		pgid:     le.Uint64(m[40:]),
		txid:     le.Uint64(m[48:]),
		checksum: le.Uint64(m[56:]),
	}
	bm.sumOK = bm.checksum == h.Sum64()
	return bm
}

// valid reports whether bbolt would accept m as a meta page.
func (m boltMeta) valid() bool {
	return m.magic == boltMagic && m.version == boltVersion && m.sumOK
}

// checkHeader inspects an existing store file before bbolt maps it, so that
// a file bbolt would reject, panic on, or fault on (a truncated file makes
// mmap reads beyond its end raise SIGBUS) becomes an ErrForeign or ErrCorrupt
// error instead. A missing or empty file passes: bbolt creates it. empty
// reports a file that exists with no bytes, which Open warns about.
func checkHeader(path string) (empty bool, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("%w: not a regular file", ErrForeign)
	}
	if fi.Size() == 0 {
		return true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return false, checkHeaderOf(f, fi.Size())
}

// checkHeaderOf does checkHeader's work on an open file of the given size.
func checkHeaderOf(f io.ReaderAt, size int64) error {
	const need = pageHeaderSize + metaSize
	buf := make([]byte, need)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if n < need {
		if n >= pageHeaderSize+4 && binary.NativeEndian.Uint32(buf[pageHeaderSize:]) == boltMagic {
			return fmt.Errorf("%w: truncated to %d bytes", ErrCorrupt, size)
		}
		return fmt.Errorf("%w: not a bbolt database (%d bytes)", ErrForeign, size)
	}
	m0 := parseMeta(buf)

	// bbolt takes the page size from meta 0, or, when that page is damaged,
	// assumes the OS page size to find meta 1.
	pageSize := int64(os.Getpagesize())
	if m0.valid() {
		pageSize = int64(m0.pageSize)
	}
	var m1 boltMeta
	buf1 := make([]byte, need)
	if n, err := f.ReadAt(buf1, pageSize); err == nil && n == need {
		m1 = parseMeta(buf1)
	} else if err != nil && !errors.Is(err, io.EOF) {
		return err
	}

	if m0.magic != boltMagic && m1.magic != boltMagic {
		return fmt.Errorf("%w: not a bbolt database", ErrForeign)
	}
	if (m0.magic == boltMagic && m0.version != boltVersion) || (m1.magic == boltMagic && m1.version != boltVersion) {
		return fmt.Errorf("%w: unsupported bbolt file format version", ErrForeign)
	}
	// bbolt uses the valid meta with the higher transaction id.
	var m boltMeta
	switch {
	case m0.valid() && m1.valid():
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case m0.valid():
		m = m0
	case m1.valid():
		m = m1
	default:
		return fmt.Errorf("%w: both meta pages fail their checksum", ErrCorrupt)
	}

	ps := int64(m.pageSize)
	switch {
	case ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0:
		return fmt.Errorf("%w: page size %d", ErrCorrupt, ps)
	case size < 2*ps:
		return fmt.Errorf("%w: truncated to %d bytes", ErrCorrupt, size)
	case m.pgid > uint64(size/ps):
		// Pages up to the high-water mark must exist, or reading them
		// through the mapping faults.
		return fmt.Errorf("%w: truncated: %d bytes hold %d pages, meta needs %d", ErrCorrupt, size, size/ps, m.pgid)
	case m.root < 2 || m.root >= m.pgid:
		return fmt.Errorf("%w: root page %d outside [2, %d)", ErrCorrupt, m.root, m.pgid)
	case m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.pgid):
		return fmt.Errorf("%w: freelist page %d outside [2, %d)", ErrCorrupt, m.freelist, m.pgid)
	}
	if _, err := checkPage(f, ps, m.pgid, m.root, branchPageFlag, leafPageFlag); err != nil {
		return fmt.Errorf("root page: %w", err)
	}
	if m.freelist != noFreelist {
		if err := checkFreelist(f, ps, m.pgid, m.root, m.freelist); err != nil {
			return fmt.Errorf("freelist page: %w", err)
		}
	}
	return nil
}

// pageHeader is the header every bbolt page starts with.
type pageHeader struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

// checkPage reads page id's header and reports ErrCorrupt unless it names
// itself id, carries one of the wanted type flags and ends below the
// high-water mark pgid. bbolt panics on the first two.
func checkPage(f io.ReaderAt, pageSize int64, pgid, id uint64, want ...uint16) (pageHeader, error) {
	var b [pageHeaderSize]byte
	if _, err := f.ReadAt(b[:], int64(id)*pageSize); err != nil {
		return pageHeader{}, fmt.Errorf("%w: page %d: %v", ErrCorrupt, id, err)
	}
	ne := binary.NativeEndian
	h := pageHeader{id: ne.Uint64(b[0:]), flags: ne.Uint16(b[8:]), count: ne.Uint16(b[10:]), overflow: ne.Uint32(b[12:])}
	if h.id != id {
		return h, fmt.Errorf("%w: page %d calls itself %d", ErrCorrupt, id, h.id)
	}
	if id+uint64(h.overflow) >= pgid {
		return h, fmt.Errorf("%w: page %d overflows past the high-water mark %d", ErrCorrupt, id, pgid)
	}
	for _, w := range want {
		if h.flags == w {
			return h, nil
		}
	}
	return h, fmt.Errorf("%w: page %d has type %#x", ErrCorrupt, id, h.flags)
}

// checkFreelist checks the freelist page id: bbolt loads it inside Open and
// trusts its element count so far that a garbage count is a fatal runtime
// error (not a panic) under the race detector's pointer checks, and free
// page ids beyond the file would hand out pages that do not exist.
func checkFreelist(f io.ReaderAt, pageSize int64, pgid, root, id uint64) error {
	h, err := checkPage(f, pageSize, pgid, id, freelistFlag)
	if err != nil {
		return err
	}
	span := (int64(h.overflow) + 1) * pageSize
	data := make([]byte, span-pageHeaderSize)
	if _, err := f.ReadAt(data, int64(id)*pageSize+pageHeaderSize); err != nil {
		return fmt.Errorf("%w: freelist page %d: %v", ErrCorrupt, id, err)
	}
	ne := binary.NativeEndian
	// A count of 0xFFFF means the real count is the first element.
	n, first := uint64(h.count), 0
	if h.count == 0xFFFF {
		n, first = ne.Uint64(data), 1
	}
	if n > uint64(len(data)/8-first) {
		return fmt.Errorf("%w: freelist of %d ids does not fit its %d bytes", ErrCorrupt, n, span)
	}
	// bbolt would hand a free page out to later writes: one that is out of
	// range, listed twice, or in use as the root or the freelist itself
	// means damage that would spread.
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = ne.Uint64(data[(first+i)*8:])
	}
	slices.Sort(ids)
	for i, free := range ids {
		switch {
		case free < 2 || free >= pgid:
			return fmt.Errorf("%w: free page %d outside [2, %d)", ErrCorrupt, free, pgid)
		case i > 0 && ids[i-1] == free:
			return fmt.Errorf("%w: page %d listed free twice", ErrCorrupt, free)
		case free == root || (free >= id && free <= id+uint64(h.overflow)):
			return fmt.Errorf("%w: page %d is in use and listed free", ErrCorrupt, free)
		}
	}
	return nil
}
