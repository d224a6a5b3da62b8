// tlogcheck: verify a C2SP tlog-tiles log with Go's own golang.org/x/mod/sumdb/{note,tlog}.
//
// It fetches <url>/checkpoint, verifies its Ed25519 note signature with -vkey, then for each
// requested record index fetches the entry bundle, hashes the entry (RFC 6962 leaf hash),
// builds an inclusion proof from the tiles via tlog.TileHashReader + tlog.ProveRecord (which
// authenticates every tile it reads against the checkpoint root), and checks it with
// tlog.CheckRecord. With -old N it also proves/checks consistency from size N (ProveTree/CheckTree).
//
// A test peer of g6-evidence (tests/peers): Go's own tile and proof code reading what g6 publishes.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

var (
	baseURL  = flag.String("url", "", "tlog-tiles prefix, e.g. http://127.0.0.1:8765/")
	vkeyFile = flag.String("vkey", "", "file holding the log's Ed25519 verifier key (name+hash+base64)")
	indexes  = flag.String("index", "0", "comma-separated record indexes to prove, or 'all'")
	oldSize  = flag.Int64("old", -1, "if >= 1, also prove consistency from this tree size to the checkpoint")
)

// fmtN encodes a tile index as C2SP tlog-tiles path elements: 1234067 -> x001/x234/067.
func fmtN(n int64) string {
	s := fmt.Sprintf("%03d", n%1000)
	for n >= 1000 {
		n /= 1000
		s = fmt.Sprintf("x%03d/", n%1000) + s
	}
	return s
}

// c2spPath is the C2SP path of a sumdb/tlog tile (height 8; L == -1 means the entry bundle).
// Go's own Tile.Path() is the sumdb layout "tile/8/<L>/<N>" with "data" for entries: not C2SP.
func c2spPath(t tlog.Tile) string {
	l := strconv.Itoa(t.L)
	if t.L == -1 {
		l = "entries"
	}
	p := "tile/" + l + "/" + fmtN(t.N)
	if t.W < 1<<t.H {
		p += ".p/" + strconv.Itoa(t.W)
	}
	return p
}

func get(path string) ([]byte, error) {
	resp, err := http.Get(strings.TrimSuffix(*baseURL, "/") + "/" + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// getTile fetches a tile, falling back to the full tile (truncated) if the partial one is gone.
func getTile(t tlog.Tile) ([]byte, error) {
	b, err := get(c2spPath(t))
	if err != nil && t.W < 1<<t.H {
		full := t
		full.W = 1 << t.H
		if fb, ferr := get(c2spPath(full)); ferr == nil {
			return fb, nil
		}
	}
	return b, err
}

type tileReader struct {
	fetched int
	cache   map[tlog.Tile][]byte // tiles are immutable: fetch each once
}

func (r *tileReader) Height() int                     { return 8 }
func (r *tileReader) SaveTiles([]tlog.Tile, [][]byte) {}
func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		if b, ok := r.cache[t]; ok {
			out[i] = b
			continue
		}
		b, err := getTile(t)
		if err != nil {
			return nil, err
		}
		if want := t.W * tlog.HashSize; len(b) < want {
			return nil, fmt.Errorf("%s: %d bytes, want %d", c2spPath(t), len(b), want)
		} else {
			b = b[:want]
		}
		r.fetched++
		log.Printf("fetched %s (%d bytes)", c2spPath(t), len(b))
		out[i] = b
		r.cache[t] = b
	}
	return out, nil
}

// entry returns record n from its entry bundle (big-endian uint16 length-prefixed entries).
func entry(n, size int64) ([]byte, error) {
	t := tlog.Tile{H: 8, L: -1, N: n / 256, W: 256}
	if rem := size - t.N*256; rem < 256 {
		t.W = int(rem)
	}
	b, err := getTile(t)
	if err != nil {
		return nil, err
	}
	for i := int64(0); ; i++ {
		if len(b) < 2 {
			return nil, errors.New("entry bundle truncated")
		}
		l := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+l {
			return nil, errors.New("entry bundle truncated")
		}
		if i == n%256 {
			return b[2 : 2+l], nil
		}
		b = b[2+l:]
	}
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	vk, err := os.ReadFile(*vkeyFile)
	if err != nil {
		log.Fatal(err)
	}
	verifier, err := note.NewVerifier(strings.TrimSpace(string(vk)))
	if err != nil {
		log.Fatalf("vkey: %v", err)
	}
	raw, err := get("checkpoint")
	if err != nil {
		log.Fatal(err)
	}
	n, err := note.Open(raw, note.VerifierList(verifier))
	if err != nil {
		log.Fatalf("checkpoint signature: %v", err)
	}
	lines := strings.SplitN(n.Text, "\n", 4)
	if len(lines) < 4 || lines[0] != verifier.Name() {
		log.Fatalf("checkpoint origin %q does not match key name %q", lines[0], verifier.Name())
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		log.Fatalf("size: %v", err)
	}
	rootB, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(rootB) != tlog.HashSize {
		log.Fatalf("bad root hash %q", lines[2])
	}
	var root tlog.Hash
	copy(root[:], rootB)
	fmt.Printf("checkpoint OK: origin=%s size=%d root=%s\n", lines[0], size, root)

	tr := &tileReader{cache: map[tlog.Tile][]byte{}}
	hr := tlog.TileHashReader(tlog.Tree{N: size, Hash: root}, tr)

	var idx []int64
	if *indexes == "all" {
		for i := int64(0); i < size; i++ {
			idx = append(idx, i)
		}
	} else {
		for _, s := range strings.Split(*indexes, ",") {
			i, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				log.Fatal(err)
			}
			idx = append(idx, i)
		}
	}
	fails := 0
	for _, i := range idx {
		e, err := entry(i, size)
		if err != nil {
			log.Fatalf("record %d: %v", i, err)
		}
		h := tlog.RecordHash(e)
		p, err := tlog.ProveRecord(size, i, hr)
		if err == nil {
			err = tlog.CheckRecord(p, size, root, i, h)
		}
		if err != nil {
			fails++
			fmt.Printf("record %d: FAIL: %v\n", i, err)
			continue
		}
		if len(idx) <= 8 {
			fmt.Printf("record %d: inclusion proof OK (%d hashes), entry %q\n", i, len(p), bytes.TrimSpace(e))
		}
	}
	if *oldSize >= 1 {
		oldRoot, err := tlog.TreeHash(*oldSize, hr)
		if err == nil {
			var p tlog.TreeProof
			p, err = tlog.ProveTree(size, *oldSize, hr)
			if err == nil {
				err = tlog.CheckTree(p, size, root, *oldSize, oldRoot)
			}
			fmt.Printf("consistency %d -> %d: old root %s, %d proof hashes\n", *oldSize, size, oldRoot, len(p))
		}
		if err != nil {
			fails++
			fmt.Printf("consistency: FAIL: %v\n", err)
		}
	}
	fmt.Printf("%d records checked, %d failed, %d tiles fetched\n", len(idx), fails, tr.fetched)
	if fails > 0 {
		os.Exit(1)
	}
}
