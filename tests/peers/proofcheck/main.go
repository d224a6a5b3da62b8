// proofcheck: verify a C2SP tlog-proof (c2sp.org/tlog-proof@v1) with torchwood's own verifier,
// torchwood.VerifyProof (filippo.io/torchwood v0.10.0).
//
//	proofcheck -vkey FILE -origin ORIGIN -proof FILE -record FILE
//
// The record is the log entry's bytes (for g6, the receipt's RFC 8785 canonical JSON, signature
// included); its RFC 6962 leaf hash is tlog.RecordHash. The policy is the log's key and its origin,
// 2-of-2, as torchwood's documentation pairs them. Exit 0 and "proof ok: index N" when the proof
// verifies, else exit 1 and torchwood's error.
//
// A test peer of g6-evidence (tests/peers): a tlog-proof verifier nobody here wrote.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func main() {
	vkeyFile := flag.String("vkey", "", "file holding the log's verifier key (name+hash+base64)")
	origin := flag.String("origin", "", "the log's checkpoint origin")
	proofFile := flag.String("proof", "", "the tlog-proof file")
	recordFile := flag.String("record", "", "the entry's bytes")
	flag.Parse()
	if err := run(*vkeyFile, *origin, *proofFile, *recordFile); err != nil {
		fmt.Fprintln(os.Stderr, "proofcheck:", err)
		os.Exit(1)
	}
}

func run(vkeyFile, origin, proofFile, recordFile string) error {
	vkey, err := os.ReadFile(vkeyFile)
	if err != nil {
		return err
	}
	v, err := note.NewVerifier(strings.TrimSpace(string(vkey)))
	if err != nil {
		return fmt.Errorf("verifier key: %w", err)
	}
	proof, err := os.ReadFile(proofFile)
	if err != nil {
		return err
	}
	record, err := os.ReadFile(recordFile)
	if err != nil {
		return err
	}
	policy := torchwood.ThresholdPolicy(2, torchwood.OriginPolicy(origin), torchwood.SingleVerifierPolicy(v))
	if err := torchwood.VerifyProof(policy, tlog.RecordHash(record), proof); err != nil {
		return err
	}
	extra, _ := torchwood.ProofExtraData(proof)
	fmt.Printf("proof ok: %d bytes of extra data\n", len(extra))
	return nil
}
