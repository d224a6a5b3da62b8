// cosigcheck verifies witness cosignatures of a checkpoint with torchwood's own cosignature/v1 code
// (filippo.io/torchwood, the module litewitness is built from) and Go's signed-note reader
// (golang.org/x/mod/sumdb/note): an implementation independent of g6's, for g6's tests.
//
//	cosigcheck -vkey <witness vkey> < cosigned-checkpoint-note
//
// It prints "ok <name> <timestamp>" per witness key that signed, and exits 1 when the note does not
// open with the key, or the key it builds does not print back as the vkey given.
package main

import (
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
)

// publicOnly is a crypto.Signer holding only a public key: torchwood v0.6.1 builds its
// CosignatureVerifier from a signer; Sign is never called here.
type publicOnly ed25519.PublicKey

func (p publicOnly) Public() crypto.PublicKey { return ed25519.PublicKey(p) }
func (p publicOnly) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("verify only")
}

func main() {
	vkey := flag.String("vkey", "", "the witness's cosignature verifier key")
	flag.Parse()
	if err := run(*vkey); err != nil {
		fmt.Fprintln(os.Stderr, "cosigcheck:", err)
		os.Exit(1)
	}
}

func run(vkey string) error {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return errors.New("a vkey is name+id+key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != 4 {
		return errors.New("not an Ed25519 cosignature/v1 (type 0x04) vkey")
	}
	signer, err := torchwood.NewCosignatureSigner(parts[0], publicOnly(raw[1:]))
	if err != nil {
		return err
	}
	v := signer.Verifier()
	if v.String() != vkey {
		return fmt.Errorf("the key torchwood builds prints as %s, not the vkey given", v.String())
	}
	msg, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	if err != nil {
		return err
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return fmt.Errorf("note.Open: %w", err)
	}
	for _, sig := range n.Sigs {
		ts, err := torchwood.CosignatureTimestamp(sig)
		if err != nil {
			return err
		}
		fmt.Printf("ok %s %d\n", sig.Name, ts)
	}
	return nil
}
