"""Verifying an evidence bundle offline (``g6 bundle verify``): one verdict per citation, a result per check.

What the verdicts show (citation id, receipt id, URL, quote, the cited read's outcome and HTTP status) is
recomputed from the verified receipt and the verified body, never copied from the manifest, which may be
unsigned (:mod:`g6.prove.bundle_citations`). Every checkpoint the bundle shows, and every one the grader
kept, must be of one history (:mod:`g6.prove.bundle_history`). Every verdict that names a key says where
it came from: pinned with ``--key``, or shipped inside the bundle, not pinned. The zip is read by
:mod:`g6.prove.bundle_zip`; the layout is described in :mod:`g6.prove.bundle`.
"""

from __future__ import annotations

import os
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from cryptography import x509

from g6.cite.manifest import Manifest
from g6.errors import BundleMemberError, G6Error
from g6.ledger.keys import VerifyKey
from g6.ledger.note import Checkpoint, NoteError, open_checkpoint, parse_note, signed_by
from g6.ledger.transparency.policy import Policy
from g6.prove.bundle_citations import CitationChecks
from g6.prove.bundle_history import CONSISTENCY, History
from g6.prove.bundle_keys import INCLUSION_PROOF, BundleKeys
from g6.prove.bundle_report import (
    MISBEHAVIOR,
    PINNED,
    SHIPPED,
    BundleCheck,
    BundleReport,
    CitationVerdict,
    Fork,
    PinnedKey,
    Seen,
    UsedKey,
)
from g6.prove.bundle_timestamps import BundleTimestamps
from g6.prove.bundle_zip import (
    MAX_CENTRAL_DIRECTORY,
    MAX_INDEX,
    MAX_MEMBERS,
    MAX_PARSED_BODY,
    RECORD_ERRORS,
    ZIP_ERRORS,
    Members,
    central_directory,
    declared_files,
    member_problems,
    name_problem,
    quoted,
    strict_json,
)

__all__ = ["MISBEHAVIOR", "BundleCheck", "BundleReport", "CitationVerdict", "Fork", "PinnedKey", "UsedKey",
           "verify_bundle"]


def verify_bundle(path: str | os.PathLike[str], keys: Sequence[VerifyKey | PinnedKey] = (),
                  trust_bundle_keys: bool = False, *, origin: str | None = None, allow_unsigned: bool = False,
                  max_parsed_body: int = MAX_PARSED_BODY, kept: Sequence[tuple[str, str]] = (),
                  progress: Callable[[int, int], None] | None = None, policy: Policy | None = None,
                  tsa_roots: Sequence[x509.Certificate] | None = None) -> BundleReport:
    """Check a bundle offline. ``keys`` pins the publisher's public key(s); without them the
    report fails ``key_pinned`` unless ``trust_bundle_keys`` says to take the bundle's own (the check is
    then ``bundle_keys``, and every verdict says the keys were shipped inside the bundle, not pinned).
    ``origin`` (or the origin a verifier key names) pins the log the checkpoint must be of.
    An unsigned manifest fails ``manifest_signature`` unless ``allow_unsigned``. ``kept`` holds (label,
    signed note) checkpoints the grader kept: each must be the bundle's or consistent with it, by a proof
    the bundle carries (``kept_checkpoint``). With ``policy`` (a C2SP tlog-policy), the checkpoint, with the
    witness cosignatures it carries, must meet its quorum (``witnesses``). ``tsa_roots`` (pinned TSA root
    certificates) has the RFC 3161 tokens the bundle carries checked, and each citation given a
    ``trusted_time`` verdict (:mod:`g6.prove.bundle_timestamps`). ``progress(members checked, members)`` is
    called as each member is read."""
    pinned = tuple(k if isinstance(k, PinnedKey) else PinnedKey(k) for k in keys)
    try:
        with open(path, "rb") as fp:
            cd = central_directory(fp)
            if cd is not None and (cd[0] > MAX_MEMBERS or cd[1] > MAX_CENTRAL_DIRECTORY):
                return BundleReport(None, (BundleCheck("zip", False, f"the zip has {cd[0]} entries in a "
                                                       f"{cd[1]}-byte directory, over {MAX_MEMBERS} entries or "
                                                       f"{MAX_CENTRAL_DIRECTORY} bytes"), *_unchecked(kept)))
            with zipfile.ZipFile(fp) as z:
                return _Verifier(z, cd[2] if cd else None, pinned, trust_bundle_keys, origin, allow_unsigned,
                                 max_parsed_body, progress, kept, policy, tsa_roots).run()
    except ZIP_ERRORS as e:
        return BundleReport(None, (BundleCheck("zip", False, f"not a readable zip: {e}"), *_unchecked(kept)))


def _unchecked(kept: Sequence[tuple[str, str]]) -> list[BundleCheck]:
    return [BundleCheck("kept_checkpoint", False, f"{label}: not checked: the bundle's checkpoint could not be read")
            for label, _ in kept]


class _Verifier:
    def __init__(self, z: zipfile.ZipFile, cd_offset: int | None, pinned: tuple[PinnedKey, ...],
                 trust_bundle_keys: bool, origin: str | None, allow_unsigned: bool, max_parsed_body: int,
                 progress: Callable[[int, int], None] | None = None, kept: Sequence[tuple[str, str]] = (),
                 policy: Policy | None = None, tsa_roots: Sequence[x509.Certificate] | None = None) -> None:
        self.z = z
        self.policy = policy
        self.tsa_roots = tsa_roots
        self.progress = progress
        self.cd_offset = cd_offset
        self.pinned = pinned
        self.trust_bundle_keys = trust_bundle_keys
        self.origin = origin
        self.allow_unsigned = allow_unsigned
        self.max_parsed_body = max_parsed_body
        self.checks: list[BundleCheck] = []
        self.index_problems: list[str] = []
        self.members: Members | None = None
        self.declared_total = 0
        self.root_inflated = 0
        self.kept = tuple(kept)
        self.used: list[UsedKey] = []
        self.keys_said = "a pinned key" if pinned else "a key shipped inside the bundle"
        self.history: History | None = None
        self.history_at = 0  # where the history verdict goes among the bundle checks
        self.manifest_key: str | None = None
        self.manifest_said: str | None = None  # the manifest's key, and where it came from
        self.bkeys = BundleKeys(())  # the log's keys over time (the used keys, once known; then the key entries)
        self.proof_texts: dict[str, bytes | BundleMemberError] = {}  # inclusion proofs read for their key entries

    def _report(self, manifest_id: str | None = None, citations: Iterable[CitationVerdict] = (),
                signed: bool = False) -> BundleReport:
        inflated = self.members.inflated if self.members else self.root_inflated
        forks: tuple[Fork, ...] = tuple(self.history.forks) if self.history is not None else ()
        if not any(c.check == "kept_checkpoint" for c in self.checks):  # every --checkpoint gets a verdict
            self.checks += _unchecked(self.kept)
        if self.policy is not None and not any(c.check == "witnesses" for c in self.checks):  # fails closed
            self.checks.append(BundleCheck("witnesses", False, "not checked: the bundle's checkpoint could not be "
                                                               "read or does not verify"))
        return BundleReport(manifest_id, tuple(self.checks), tuple(citations), signed, self.declared_total, inflated,
                            tuple(self.used), forks, self.manifest_key, self.manifest_said)

    def _index_check(self) -> BundleCheck:
        problems = list(dict.fromkeys(self.index_problems))
        detail = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
        return BundleCheck("index", not problems, detail)

    def run(self) -> BundleReport:
        infos = self.z.infolist()
        zip_problems, refused = member_problems(infos, self.cd_offset)
        by_name: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            bad = name_problem(info.filename)
            if bad:
                self.index_problems.append(f"member {quoted(info.filename)}: {bad}")
                refused[info.filename] = f"{quoted(info.filename)} has {bad}"
            if info.filename in by_name:
                self.index_problems.append(f"member {quoted(info.filename)} appears more than once")
                refused[info.filename] = f"{quoted(info.filename)} appears more than once"
            by_name[info.filename] = info
        self.checks.append(BundleCheck("zip", not zip_problems, "; ".join(zip_problems[:8])))
        # bundle.json is the root of the member digests, so it is read bounded but against nothing
        try:
            root = by_name.get("bundle.json")
            if root is None:
                raise BundleMemberError("the bundle has no bundle.json")
            if "bundle.json" in refused:
                raise BundleMemberError(refused["bundle.json"])
            if root.file_size > MAX_INDEX:
                raise BundleMemberError(f"bundle.json is {root.file_size} bytes, over {MAX_INDEX}")
            try:
                with self.z.open(root) as f:
                    raw = f.read(MAX_INDEX + 1)
            except ZIP_ERRORS as e:
                raise BundleMemberError(f"bundle.json is unreadable ({type(e).__name__}: {e})") from None
            self.root_inflated = len(raw)
            if len(raw) != root.file_size:
                raise BundleMemberError(f"bundle.json inflates to {len(raw)} bytes, not the {root.file_size} "
                                        "the zip declares")
            index = strict_json(raw, "bundle.json")
            declared, problems = declared_files(index)
        except BundleMemberError as e:
            self.index_problems.append(str(e))
            self.checks.append(self._index_check())
            return self._report()
        self.index_problems += problems
        self.declared_total = sum(s for _, s in declared.values()) + root.file_size
        self.index_problems += [f"bundle.json lists {quoted(n)}, which the zip does not hold"
                                for n in sorted(declared) if n not in by_name]
        self.index_problems += [f"the zip holds {quoted(n)}, which bundle.json does not list"
                                for n in sorted(by_name) if n not in declared and n != "bundle.json"]
        if any(p.startswith("bundle.json declares") for p in problems):
            self.checks.append(self._index_check())
            return self._report()
        self.members = Members(self.z, by_name, refused, declared, self.progress)
        self.members.inflated += self.root_inflated
        return self._verify(index)

    def _record(self, name: str) -> bytes:
        assert self.members is not None
        return self.members.read(name)

    def _keys(self) -> list[UsedKey]:
        """The keys this verification uses, each with where it came from; and the verdict on them."""
        if self.pinned:
            self.used = list({k.key.key_id: UsedKey(k.key, PINNED, k.origin) for k in self.pinned}.values())
            self.checks.append(BundleCheck("key_pinned", True, "pinned " + ", ".join(
                k.key_id + (f" (log {k.origin})" if k.origin else "") for k in self.used) + " with --key"))
            return self.used
        shipped: dict[str, UsedKey] = {}
        assert self.members is not None
        for name in ["keys/signing.pub", *sorted(n for n in self.members.declared if n.startswith("keys/trusted/"))]:
            try:
                k = VerifyKey.from_text(self._record(name).decode("utf-8"))
                shipped.setdefault(k.key_id, UsedKey(k, SHIPPED))
            except (G6Error, UnicodeDecodeError) as e:
                self.index_problems.append(str(e) if isinstance(e, BundleMemberError) else f"{name}: {e}")
        self.used = list(shipped.values())
        if self.trust_bundle_keys:  # never called pinned: anyone can make a bundle that holds with its own keys
            self.checks.append(BundleCheck(
                "bundle_keys", bool(self.used),
                f"{', '.join(k.key_id for k in self.used)} {SHIPPED} (--trust-bundle-keys): anyone can make a "
                "bundle that holds with the keys it ships" if self.used else "the bundle holds no readable key"))
        else:
            self.checks.append(BundleCheck("key_pinned", False, "no --key given: keys shipped inside the bundle "
                                                                "prove nothing; pin the publisher's checkpoint "
                                                                "verifier key with --key"))
        return self.used

    def _checkpoint(self, keys: list[UsedKey]) -> tuple[VerifyKey, Seen] | None:
        """The key that signs the checkpoint, and the checkpoint, checked as ``g6 verify-proof`` checks it:
        by a key valid at its size (a used key, or one the log's key entries the bundle carries prove back
        to one: the key after a rotation, say), of the origin a verifier key (or ``origin``) names."""
        self.bkeys = BundleKeys(keys)  # the used keys alone, until the checkpoint's tree is known
        try:
            note = self._record("checkpoint.note").decode("utf-8")
            unsigned = Checkpoint.parse(parse_note(note)[0])  # its size and root; the signature is checked below
        except (BundleMemberError, UnicodeDecodeError, NoteError) as e:
            self.checks.append(BundleCheck("checkpoint_signature", False, str(e)))
            return None
        self.bkeys = BundleKeys(keys, unsigned, self._proofs())
        roots = {k.key_id: k for k in keys}
        named = {self.origin} if self.origin else {k.origin for k in keys if k.origin}
        why: list[str] = []
        for key in self.bkeys.at(unsigned.size):
            root = roots.get(key.key_id)
            wants = [self.origin or root.origin] if root is not None else sorted(named) or [None]
            for want in wants:
                try:
                    cp = open_checkpoint(note, key, want)
                except NoteError as e:
                    why.append(str(e))
                    continue
                pin = ("the origin is pinned by --origin" if self.origin else
                       "the origin is pinned by the verifier key" if want else
                       "the origin is not pinned: give the verifier key or --origin to pin it")
                self.checks.append(BundleCheck("checkpoint_signature", True, f"{cp.origin} size {cp.size} signed by "
                                                                             f"{self.bkeys.said(key.key_id)}; {pin}"))
                if self.policy is not None:
                    v = self.policy.satisfied(note, time.time())
                    self.checks.append(BundleCheck("witnesses", v.ok, v.detail))
                return key, Seen("checkpoint.note", cp, note)
        late = [kid for kid, life in self.bkeys.timeline.lives.items()
                if not life.valid_at(max(unsigned.size, 1)) and signed_by(note, life.key)]
        if late:  # a key the bundle knows signed it, outside its window in the log's key entries
            why = [f"not valid at size {unsigned.size} (retired, or not yet added, there): signed by "
                   f"{self.bkeys.said(late[0])}"]
        elif not keys:
            why.append("no key to check it with")
        elif not why:
            why.append(f"no {self.keys_said[2:]} (nor a key the log's key entries in the bundle prove) is valid at "
                       f"size {unsigned.size}")
        self.checks.append(BundleCheck("checkpoint_signature", False,
                                       f"the checkpoint is not signed by {self.keys_said}: "
                                       + "; ".join(dict.fromkeys(quoted(w, 160)[1:-1] for w in why))))
        return None

    def _proofs(self) -> list[bytes]:
        """Every inclusion proof the bundle declares, read once here (kept for its citation's verdict), for
        the key entries they carry."""
        assert self.members is not None
        out = []
        for name in sorted(n for n in self.members.declared if INCLUSION_PROOF.fullmatch(n)):
            try:
                self.proof_texts[name] = self._record(name)
                out.append(self.proof_texts[name])
            except BundleMemberError as e:
                self.proof_texts[name] = e
        return out

    def _read_proof(self, name: str) -> bytes:
        kept = self.proof_texts.pop(name, None)
        if isinstance(kept, BundleMemberError):
            raise kept
        return kept if kept is not None else self._record(name)

    def _one_history(self, signer: tuple[VerifyKey, Seen] | None) -> None:
        """The bundle's history: its consistency proofs read, each checkpoint the grader kept judged."""
        assert self.members is not None
        self.history_at = len(self.checks)
        if signer is not None:
            names = [n for n in self.members.declared if CONSISTENCY.fullmatch(n)]
            self.history = History(signer[1], self.bkeys.at, self.keys_said, self._record, names)
        for label, note in self.kept:
            if self.history is None:
                ok, why = False, f"not checked: the bundle's checkpoint does not verify with {self.keys_said}"
            else:
                ok, why = self.history.kept(label, note)
            self.checks.append(BundleCheck("kept_checkpoint", ok, f"{label}: {why}"))

    def _finish(self, proofs: int = 0) -> None:
        """The history verdict (after every inclusion proof was judged), then the index."""
        if self.history is not None:
            check = self.history.check(proofs)
        else:
            check = BundleCheck("history", False, f"not checked: the checkpoint does not verify with {self.keys_said}")
        self.checks.insert(self.history_at, check)
        self._finish_index()

    def _verify(self, index: Mapping[str, Any]) -> BundleReport:
        keys = self._keys()
        signer = self._checkpoint(keys)
        trusted = self.bkeys.keys()  # the used keys, and those the log's key entries in the bundle prove
        if signer is not None and index.get("origin") != signer[1].cp.origin:
            self.index_problems.append(f"bundle.json names the log {quoted(index.get('origin'))}, the checkpoint "
                                       f"{quoted(signer[1].cp.origin)}")
        self._one_history(signer)
        try:
            manifest = self._manifest()
        except RECORD_ERRORS as e:
            self.checks.append(BundleCheck("manifest", False, str(e)))
            self._finish()
            return self._report()
        signed = self._manifest_signature(manifest, trusted)
        if signed and index.get("manifest_id") != manifest.manifest_id:
            self.index_problems.append("bundle.json names another manifest id than the signed manifest's")
        checker = CitationChecks(self.members, self.max_parsed_body, self.history,
                                 f"the checkpoint does not verify with {self.keys_said}", self._read_proof, self.bkeys)
        verdicts = checker.run(manifest.citations, [k.key for k in keys],
                               signer[1].cp.origin if signer is not None else None)
        if signed:
            signed = self._signed_in_time(manifest, checker.leaves)
        if self.tsa_roots is not None:
            stamps = BundleTimestamps(self._record, self.history, self.members.declared, self.tsa_roots,
                                      f"the checkpoint does not verify with {self.keys_said}")
            self.checks.append(stamps.check())
            verdicts = [replace(v, checks=(*v.checks, stamps.citation(checker.leaves.get(v.receipt_id),
                                                                      checker.fetched.get(v.receipt_id))))
                        if v.receipt_id is not None else v for v in verdicts]
        self._finish(checker.proofs)
        return self._report(manifest.manifest_id if signed else None, verdicts, signed)

    def _manifest_signature(self, manifest: Manifest, trusted: Mapping[str, VerifyKey]) -> bool:
        if manifest.signature is None:
            if self.allow_unsigned:
                self.checks.append(BundleCheck("manifest_signature", True,
                                               "missing, accepted by --allow-unsigned: nobody signed which "
                                               "citations this is; each is checked against its receipt"))
            else:
                self.checks.append(BundleCheck("manifest_signature", False, "missing"))
            return False
        try:
            signed, why = manifest.verify_signature(trusted)
        except RECORD_ERRORS as e:
            signed, why = False, f"unreadable: {e}"
        if signed:
            self.manifest_key = manifest.signature.key_id
            self.manifest_said = self.bkeys.said(self.manifest_key)
            why = f"signed by {self.manifest_said}"
        self.checks.append(BundleCheck("manifest_signature", signed, why))
        return signed

    def _signed_in_time(self, manifest: Manifest, leaves: Mapping[str, int]) -> bool:
        """A manifest carries no place in the log, but one that cites a receipt appended after its signer was
        retired was signed after that retirement: it fails ``manifest_signature``."""
        retired = self.bkeys.retired_at(self.manifest_key or "")
        late = sorted((i + 1, rid) for rid, i in leaves.items() if retired is not None and i + 1 > retired)
        if not late:
            return True
        at = next(i for i, c in enumerate(self.checks) if c.check == "manifest_signature")
        self.checks[at] = BundleCheck("manifest_signature", False, f"signed by {self.manifest_said}, which was retired "
                                                                   f"at seq {retired}, yet it cites {late[0][1]} (seq "
                                                                   f"{late[0][0]}): signed after its key was retired")
        self.manifest_key = self.manifest_said = None
        return False

    def _manifest(self) -> Manifest:
        """Parsed in its own frame, so the raw bytes and the JSON tree are freed once it returns."""
        data = strict_json(self._record("manifest.json"), "manifest.json")
        if not isinstance(data, dict):
            raise BundleMemberError("manifest.json is not a JSON object")
        manifest = Manifest.from_json(data)
        if not manifest.citations:
            raise BundleMemberError("the manifest cites nothing")
        return manifest

    def _finish_index(self) -> None:
        """Read every member nothing else read, so each is checked against its declared digest once."""
        assert self.members is not None
        for name in sorted(self.members.declared):
            if name not in self.members.results and name in self.members.infos:
                try:
                    self.members.stream(name)
                except BundleMemberError:
                    pass
        self.index_problems += [why for why in self.members.results.values() if why]
        self.checks.insert(1, self._index_check())
