"""Taking bytes out of an evidence home without breaking its proof: redact, hold, release, expire, finish.

What a redaction covers (``plan``) is found in the log itself: the bodies asked for (by digest, by the
receipts that read them, or by the URL they were read from), every receipt that names those bytes, and the
copies derived from them: the text ``g6 convert`` made of a body (a ``convert`` receipt whose ``links.from``
names it), and the other blobs of a receipt that names the body beside others (a rendered capture's DOM, text
and screenshot, as ``g6.ledger.receipts.named_blobs`` names them, so a capture's blobs are followed through the
signed receipt that names them).

A rendered capture is one page: when any of its blobs is covered, so are the sub-resources it loaded (each a
read with a receipt of its own, listed in ``capture.resources``; and the raw read ``--render auto`` made first,
``links.raw``), role ``resource``: an XHR's JSON or an image often holds what the page showed. A sub-resource
that a read outside the capture also names (a stylesheet or script many pages load) is left, said in
``skipped``: redacting it by its digest takes it out everywhere.

Certificates are never covered. The certificates a server presented over TLS (``hops[].tls``, kept as blobs)
are not what was read: they are public, the same for every read of that host, and often named by many
receipts. Redacting a page leaves them (its receipts still name them, ``ledger verify`` still checks them, a
WARC export still writes them); a digest that receipts name only as a certificate is refused
(``RedactionRefused``); and a body whose bytes some receipt also names as a certificate is left, in
``skipped``. A missing certificate therefore always fails ``ledger verify``, whatever entry names it.

The order is what makes it crash-safe. A redaction appends its signed entries first, in one transaction, under
the ledger's write lock, where it also refuses a digest held or already redacted (what another writer
appended meanwhile counts); only once they are committed does it take the bytes out of the store
(``BlobBackend.remove``: bytes, then meta, then index entry). A kill at any point leaves either nothing, or
the entries with some bytes still there: ``finish`` (run by the next redact and by ``g6 blob gc``) takes
out every byte a valid entry covers. Bytes never go without their entry.

``step`` hooks are for tests only (a crash test kills the process at each step); nothing here reads the
environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from g6.errors import (
    BadDigest,
    BlobAlreadyRedacted,
    BlobNotHeld,
    BlobOnHold,
    BlobUnreferenced,
    InputError,
    LedgerError,
    ReceiptNotFound,
    RedactionRefused,
)
from g6.ledger.keyring import timeline
from g6.ledger.keys import SigningKey, VerifyKey
from g6.ledger.log import Ledger
from g6.ledger.receipts import CAPTURE_BLOBS, Receipt, named_blobs
from g6.ledger.redactions import (
    BODY,
    DERIVED,
    ENTRY_KINDS,
    HOLD_ACTION,
    RELEASE,
    RESOURCE,
    RETENTION,
    BlobNamed,
    Redactions,
    hold_entry,
    redaction_entry,
    redactions_of,
)
from g6.ledger.row_rules import parse_utc
from g6.store import BlobBackend, BlobRef
from g6.store.digest import Digest

Step = Callable[[str], None]
Roots = Mapping[str, tuple[VerifyKey, str]]  # the verifier's roots: key id -> (key, why trusted)
BATCH = 256  # redaction entries appended per transaction by expire
PAGE_BLOBS = ("content", *(f"capture.{name}" for name in CAPTURE_BLOBS))  # what a read kept: never a certificate
NOT_READS = ("key", "wacz-key", *ENTRY_KINDS)  # the log's own entries: they read nothing


def _no_step(_: str) -> None:
    return None


# -- what a receipt names ----------------------------------------------------------------------------------
def _ref(value: Any) -> BlobRef | None:
    if not isinstance(value, Mapping):
        return None
    b3, sha, size = value.get("blake3"), value.get("sha256"), value.get("size")
    if not (isinstance(b3, str) and isinstance(sha, str) and type(size) is int):
        return None
    try:
        if Digest.parse(b3).algo != "blake3" or Digest.parse(sha).algo != "sha256":
            return None
    except BadDigest:
        return None
    return BlobRef(b3, sha, size)


def blobs_named(receipt: Receipt | Mapping[str, Any]) -> list[tuple[str, BlobRef]]:
    """Every well-formed blob a receipt (or its JSON) names as (where, ref), as ``named_blobs`` names them: its
    ``content``, a rendered capture's ``capture.dom``, ``capture.text`` and ``capture.screenshot``, and the
    certificates of its hops over TLS (``hop N certificate``…: never covered by a redaction, see above)."""
    data = receipt.to_json(with_signature=False) if isinstance(receipt, Receipt) else receipt
    out = []
    for where, value in named_blobs(data):
        ref = _ref(value)
        if ref is not None:
            out.append((where, ref))
    return out


def page_blobs(receipt: Receipt | Mapping[str, Any]) -> list[tuple[str, BlobRef]]:
    """The blobs of ``blobs_named`` that hold what was read: its body and a capture's blobs, no certificate."""
    return [(where, ref) for where, ref in blobs_named(receipt) if where in PAGE_BLOBS]


def _source_of(receipt: Receipt) -> BlobRef | None:
    """The body a derived copy was made from (``links.from`` of a convert receipt), or None."""
    return _ref(receipt.links.get("from")) if isinstance(receipt.links, Mapping) else None


def _reads(ledger: Ledger) -> Iterator[Receipt]:
    """Every receipt that is not the log's own entry (a key, WACZ key, redaction or hold entry), by seq."""
    for e in ledger.entries():
        if e.receipt.kind not in NOT_READS:
            yield e.receipt


# -- what a redaction covers -----------------------------------------------------------------------------
@dataclass
class Plan:
    """The bodies asked for, the copies derived from them, and the receipts naming any of those bytes."""

    bodies: dict[str, BlobRef] = field(default_factory=dict)  # blake3 -> ref, in the order asked
    derived: dict[str, BlobNamed] = field(default_factory=dict)  # blake3 -> the copy or sub-resource (from, via)
    receipts: dict[str, set[str]] = field(default_factory=dict)  # body blake3 -> receipt ids naming it or a copy
    skipped: dict[str, str] = field(default_factory=dict)  # digest -> why it is left (shared, a certificate…)
    # each capture covered: its id -> (the blob its sub-resources hang from, the receipts of its parts)
    captures: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    parts_read: set[str] = field(default_factory=set)  # part receipts already looked at

    def blobs_of(self, body: str) -> list[BlobNamed]:
        """A body and its derived copies, as a redaction entry names them."""
        ref = self.bodies[body]
        out = [BlobNamed(ref.blake3, ref.sha256, ref.size, BODY)]
        out += [d for d in self.derived.values() if self._root_of(d) == body]
        return out

    def _root_of(self, d: BlobNamed) -> str:
        seen = set()
        while d.source not in self.bodies and d.source in self.derived and d.source not in seen:
            seen.add(d.source)
            d = self.derived[d.source]
        return str(d.source)

    def all_blobs(self) -> list[BlobNamed]:
        return [b for body in self.bodies for b in self.blobs_of(body)]


def _asked(ledger: Ledger, digests: Sequence[str], receipt_ids: Sequence[str],
           urls: Sequence[Sequence[str]]) -> Plan:
    """The bodies asked for, each found in a receipt that names it (a digest no receipt names is refused)."""
    wanted: dict[str, str] = {}  # digest as given (normalised) -> itself
    for d in digests:
        try:
            wanted[str(Digest.parse(d))] = d
        except BadDigest as e:
            raise InputError(str(e)) from None
    ids, url_set = set(receipt_ids), {u for forms in urls for u in forms}
    plan, found_ids, found_urls, found = Plan(), set(), set(), set()
    certificates: dict[str, str] = {}  # a digest asked for -> where a receipt names it as a certificate
    for r in _reads(ledger):
        named = blobs_named(r)
        hops = {h.url for h in r.hops} | {str(r.request.get("url", "")), str(r.final_url or "")}
        by_id, by_url = r.receipt_id in ids, bool(url_set & hops)
        if by_id:
            found_ids.add(r.receipt_id)
        if by_url:
            found_urls |= url_set & hops
        for where, ref in named:
            hit = {ref.blake3, ref.sha256} & wanted.keys()
            if where not in PAGE_BLOBS:  # a certificate: never a body
                for d in hit:
                    certificates.setdefault(d, f"{where} of {r.receipt_id}")
                continue
            if hit or ((by_id or by_url) and where == "content"):
                plan.bodies.setdefault(ref.blake3, ref)
                found |= hit
    missing = [d for d in wanted if d not in found]
    for d in missing:
        if d in certificates:
            raise RedactionRefused(f"{wanted[d]} is a certificate a server presented over TLS ({certificates[d]}), "
                                   "not bytes a read kept: certificates are public and shared by every read of "
                                   "that server, and are never redacted; nothing was redacted")
    missing = [wanted[d] for d in missing]
    if missing:
        raise BlobUnreferenced(f"no receipt of this ledger names {missing[0]}: there is no read whose bytes a "
                               "redaction would cover (`g6 ledger list` shows the receipts)")
    for rid in receipt_ids:
        if rid not in found_ids:
            raise BlobUnreferenced(f"no receipt {rid!r} in this ledger")
    for forms in urls:
        if not set(forms) & found_urls:
            raise BlobUnreferenced(f"no receipt of this ledger read {forms[0]}")
    if not plan.bodies:
        raise BlobUnreferenced("the receipts asked for kept no body (failed reads): there are no bytes to take out")
    return plan


def plan(ledger: Ledger, *, digests: Sequence[str] = (), receipt_ids: Sequence[str] = (),
         urls: Sequence[Sequence[str]] = ()) -> Plan:
    """What redacting these bodies covers: the bodies (by digest, by the receipts that read them, by the URL they
    were read from: each URL as the forms it may be stored in, as asked and as g6 normalises it), their derived
    copies, the sub-resources of each capture covered, and every receipt naming any of those bytes. Refuses
    (``BlobUnreferenced``) a digest, receipt or URL this ledger has no read of, and (``RedactionRefused``) a
    certificate, or a plan left with no body once the bodies that are also certificates are left out."""
    out = _asked(ledger, digests, receipt_ids, urls)
    _derive(ledger, out)
    while _add_resources(ledger, out):
        _derive(ledger, out)  # what those sub-resources' own copies are (a PDF an XHR fetched, converted)
    _leave_certificates(ledger, out)
    return out


def _derive(ledger: Ledger, out: Plan) -> None:
    """Grow ``out`` with the copies derived from what it covers, the receipts naming any of it, and the captures
    it touches, until nothing new turns up (a copy of a copy is rare)."""
    grew = True
    while grew:
        grew = False
        covered = set(out.bodies) | set(out.derived)
        for r in _reads(ledger):
            named = page_blobs(r)
            source = _source_of(r)
            from_ours = source is not None and source.blake3 in covered
            ours = [ref for _, ref in named if ref.blake3 in covered]
            if not ours and not from_ours:
                continue
            anchor = ours[0].blake3 if ours else str(source.blake3 if source else "")
            for _, ref in named:
                if ref.blake3 not in covered and ref.blake3 not in out.derived:
                    out.derived[ref.blake3] = BlobNamed(ref.blake3, ref.sha256, ref.size, DERIVED, anchor,
                                                        r.receipt_id)
                    grew = True
            for b in {*(x.blake3 for x in ours), *([source.blake3] if from_ours and source else [])}:
                out.receipts.setdefault(out._root_of(out.derived[b]) if b in out.derived else b, set()).add(
                    r.receipt_id)
            if ours and r.capture is not None and r.receipt_id not in out.captures:
                out.captures[r.receipt_id] = (named[0][1].blake3, _parts_of(r))


def _parts_of(capture: Receipt) -> tuple[str, ...]:
    """The receipts of a capture's parts: each sub-resource it lists, and the raw read made before it."""
    cap = capture.capture if isinstance(capture.capture, Mapping) else {}
    resources = cap.get("resources")
    ids = [str(e["receipt_id"]) for e in resources if isinstance(e, Mapping) and isinstance(e.get("receipt_id"), str)] \
        if isinstance(resources, list) else []
    raw = capture.links.get("raw") if isinstance(capture.links, Mapping) else None
    return tuple(dict.fromkeys([*ids, *([raw] if isinstance(raw, str) else [])]))


def _add_resources(ledger: Ledger, out: Plan) -> bool:
    """Cover the bodies of the parts of every capture ``out`` covers (role ``resource``), except those a read
    outside these captures also names (``skipped``). Whether anything was added."""
    parts = {rid: cid for cid, (_, rids) in out.captures.items() for rid in rids if rid not in out.parts_read}
    if not parts:
        return False
    covered = set(out.bodies) | set(out.derived)
    candidates: dict[str, tuple[BlobRef, str, str]] = {}  # blake3 -> (ref, the part's receipt, its capture)
    for rid, cid in parts.items():
        out.parts_read.add(rid)
        try:
            r = ledger.get(rid)
        except ReceiptNotFound:
            continue  # a capture naming a receipt this ledger lacks: verify says so; nothing here to take out
        for _, ref in page_blobs(r):
            if ref.blake3 not in covered:
                candidates.setdefault(ref.blake3, (ref, rid, cid))
    if not candidates:
        return False
    mine = {rid for _, rids in out.captures.values() for rid in rids} | set(out.captures)
    shared: dict[str, str] = {}
    for r in _reads(ledger):
        if r.receipt_id not in mine:
            for _, ref in page_blobs(r):
                if ref.blake3 in candidates:
                    shared.setdefault(ref.blake3, r.receipt_id)
    for b3, (ref, rid, cid) in candidates.items():
        if b3 in shared:
            out.skipped[b3] = (f"a sub-resource of capture {cid} that {shared[b3]}, no part of it, read too: left "
                               "(redact it by its digest to take it out of every read)")
        else:
            out.derived[b3] = BlobNamed(ref.blake3, ref.sha256, ref.size, RESOURCE, out.captures[cid][0], rid)
    return len(candidates) > len(shared)


def _leave_certificates(ledger: Ledger, out: Plan) -> None:
    """Leave out (``skipped``) every covered blob some receipt names as a certificate: certificates are never
    redacted (see above). ``RedactionRefused`` when no body is left."""
    covered = set(out.bodies) | set(out.derived)
    found: dict[str, str] = {}
    for r in _reads(ledger):
        for where, ref in blobs_named(r):
            if where not in PAGE_BLOBS and ref.blake3 in covered:
                found.setdefault(ref.blake3, f"{where} of {r.receipt_id}")
    for b3, where in found.items():
        out.bodies.pop(b3, None)
        out.derived.pop(b3, None)
        out.skipped[b3] = f"also a certificate a server presented over TLS ({where}): certificates are never redacted"
    if not out.bodies:
        first = next(iter(found), "")
        raise RedactionRefused(f"{first} is also a certificate a server presented over TLS ({found.get(first)}): "
                               "certificates are never redacted; nothing was redacted")


# -- the verified state of the log -----------------------------------------------------------------------
def current(ledger: Ledger, roots: Roots) -> Redactions:
    """The redactions and holds that count in ``ledger`` for a verifier with these ``roots``; ``LedgerError`` for a
    ledger that cannot be read (missing, or damaged: `g6 ledger verify` says how)."""
    origin = ledger.origin  # LedgerError first for a missing ledger or one without its log id
    rows = ledger.rows
    try:
        tl = timeline(roots, ((r[0], r[1], r[5]) for r in rows.select(kind="key")), origin=origin)
        return redactions_of(rows, tl, origin)
    except rows.unreadable as e:
        raise LedgerError(f"ledger {ledger.path} cannot be read ({e}); run `g6 ledger verify`") from None


# -- redact ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """What an operation appended and took out."""

    entries: tuple[Receipt, ...] = ()
    removed: tuple[str, ...] = ()  # blake3 of every blob taken out of the store
    skipped: Mapping[str, str] = field(default_factory=dict)  # digest -> why it was left
    finished: tuple[str, ...] = ()  # blobs an earlier, interrupted run left, taken out now

    def to_json(self) -> dict[str, Any]:
        return {"entries": [{"seq": (e.log or {}).get("seq"), "receipt_id": e.receipt_id, "kind": e.kind,
                             "request": dict(e.request)} for e in self.entries],
                "removed": list(self.removed), "skipped": dict(self.skipped), "finished": list(self.finished)}


def _refuse_held(state: Redactions, blobs: Iterable[BlobNamed]) -> None:
    for b in blobs:
        h = state.hold_of(b.blake3)
        if h is not None:
            raise BlobOnHold(f"{b.blake3} is under a legal hold (seq {h.seq}, {h.reason}): `g6 blob release` it "
                             "first; nothing was redacted", h.seq)


def redact(ledger: Ledger, store: BlobBackend, key: SigningKey, roots: Roots, p: Plan, reason: str, note: str = "",
           *, step: Step = _no_step, finish_first: bool = True) -> Outcome:
    """Append one signed redaction entry per body of ``p`` (with its derived copies and the receipts naming
    them), then take those bytes out of ``store``. Bodies already redacted are left (``skipped``); when nothing
    is left to redact, ``BlobAlreadyRedacted``; a blob under hold refuses the whole redaction (``BlobOnHold``).
    What an earlier run left is finished first."""
    finished = finish(ledger, store, roots, step=step) if finish_first else []
    skipped: dict[str, str] = {}

    def decide() -> list[Receipt]:
        state = current(ledger, roots)  # under the write lock: a hold or redaction appended meanwhile counts
        out = []
        skipped.clear()
        skipped.update(p.skipped)  # what the plan leaves (shared sub-resources, certificates)
        for body in p.bodies:
            have = state.of(body)
            if have is not None:
                skipped[body] = f"already {have.said()}"
                continue
            blobs = [b for b in p.blobs_of(body) if state.of(b.blake3) is None]
            _refuse_held(state, blobs)
            out.append(redaction_entry(blobs, sorted(p.receipts.get(body, ())), reason, note))
        step("deciding")  # inside the write transaction: a kill here appends nothing
        if not out:
            first = next(iter(p.bodies))
            have = state.of(first)
            raise BlobAlreadyRedacted(f"{first} is already {have.said() if have else 'redacted'}: nothing to add"
                                      + (f" (and {len(p.bodies) - 1} more)" if len(p.bodies) > 1 else ""),
                                      have.seq if have else None)
        return out

    step("planned")
    entries = ledger.append_many([], key, decide=decide)
    step("appended")
    removed = _remove(store, [BlobNamed.from_json(b) for e in entries for b in e.request["blobs"]], step)
    return Outcome(tuple(entries), tuple(removed), dict(skipped), tuple(finished))


def _remove(store: BlobBackend, blobs: Sequence[BlobNamed], step: Step) -> list[str]:
    removed = []
    for b in blobs:
        step(f"removing {b.blake3}")
        if store.remove(BlobRef(b.blake3, b.sha256, b.size)):
            removed.append(b.blake3)
        step(f"removed {b.blake3}")
    return removed


def finish(ledger: Ledger, store: BlobBackend, roots: Roots, *, deep: bool = False, step: Step = _no_step) -> list[str]:
    """Take out every byte a redaction that counts still leaves in the store (a run killed after its entry was
    appended, a body read again since): what every redact runs first. ``deep`` (``g6 blob gc``): also the meta
    and index entries a kill left of a blob whose bytes are gone (a removal call for every redacted blob).
    Never touches a blob no valid entry covers. The blake3 of each blob something was removed of."""
    state = current(ledger, roots)
    left = [r.blob for r in state.bodies() if deep or store.has(r.blob.blake3)]
    return _remove(store, left, step)


# -- hold and release ------------------------------------------------------------------------------------
def hold(ledger: Ledger, key: SigningKey, roots: Roots, p: Plan, action: str, reason: str,
         note: str = "") -> Outcome:
    """Put the bodies of ``p`` and their derived copies under a legal hold (``action`` hold), or release the
    ones held (``release``), in one signed entry. A hold of a redacted blob is refused (it is gone); a release
    of blobs none of which is held is refused (``BlobNotHeld``)."""
    skipped: dict[str, str] = {}

    def decide() -> list[Receipt]:
        state = current(ledger, roots)
        skipped.clear()
        blobs = []
        for b in p.all_blobs():
            gone = state.of(b.blake3)
            if action == HOLD_ACTION and gone is not None:
                if b.role == BODY:
                    raise BlobAlreadyRedacted(f"{b.blake3} is already {gone.said()}: there is nothing left to hold",
                                              gone.seq)
                continue
            held = state.hold_of(b.blake3)
            if action == HOLD_ACTION and held is not None:
                skipped[b.blake3] = f"already held since seq {held.seq} ({held.reason})"
            elif action == RELEASE and held is None:
                skipped[b.blake3] = "not held"
            else:
                blobs.append(b)
        if not blobs:
            first = next(iter(p.bodies))
            if action == RELEASE:
                raise BlobNotHeld(f"{first} is not under a hold: nothing to release")
            raise RedactionRefused(f"{first} is {skipped.get(first, 'held already')}: nothing to add")
        return [hold_entry(action, blobs, reason, note)]

    entries = ledger.append_many([], key, decide=decide)
    return Outcome(tuple(entries), (), dict(skipped))


# -- retention -------------------------------------------------------------------------------------------
@dataclass
class Expiry:
    """What ``expire`` found: the bodies whose every read is older than the cut-off, and what it left."""

    cutoff: str
    bodies: dict[str, BlobRef] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # blake3 -> why (cited, held, already redacted)


def expiring(ledger: Ledger, roots: Roots, cutoff: str, cited: Iterable[str] = (), *,
             include_cited: bool = False) -> Expiry:
    """The bodies read only before ``cutoff`` (RFC 3339 UTC): a body read again since is kept (its newest read
    is within retention). Cited bodies (read by a receipt in ``cited``, or re-checked by a ``recheck`` receipt,
    which re-reads only cited receipts) are skipped unless ``include_cited``; held and redacted ones always."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", cutoff):
        cutoff += "T00:00:00Z"  # a date alone: its first moment, in UTC
    limit = parse_utc(cutoff)
    if limit is None:
        raise InputError(f"--older-than {cutoff!r} is not a date (YYYY-MM-DD, or RFC 3339 in UTC)")
    cited_ids = set(cited)
    newest: dict[str, float] = {}
    refs: dict[str, BlobRef] = {}
    by: dict[str, set[str]] = {}
    for r in _reads(ledger):
        if r.kind == "recheck" and isinstance(r.links, Mapping):
            rechecked = r.links.get("rechecks")
            cited_ids.update(str(x) for x in (rechecked if isinstance(rechecked, list) else [rechecked or ""]))
        content = _ref(r.content)
        if content is None:
            continue
        t = parse_utc(r.fetched_at) or float("inf")  # a read of unknown time is never expired
        newest[content.blake3] = max(newest.get(content.blake3, t), t)
        refs.setdefault(content.blake3, content)
        by.setdefault(content.blake3, set()).add(r.receipt_id)
    state = current(ledger, roots)
    out = Expiry(cutoff)
    for b3, t in newest.items():
        if t >= limit:
            continue
        if state.of(b3) is not None:
            continue  # already redacted: nothing to say
        held = state.hold_of(b3)
        if held is not None:
            out.skipped[b3] = f"held since seq {held.seq} ({held.reason})"
        elif not include_cited and by[b3] & cited_ids:
            out.skipped[b3] = "cited (--include-cited redacts it too)"
        else:
            out.bodies[b3] = refs[b3]
    return out


def expire(ledger: Ledger, store: BlobBackend, key: SigningKey, roots: Roots, found: Expiry, note: str = "", *,
           step: Step = _no_step) -> Outcome:
    """Redact what ``expiring`` found, with reason ``retention``, ``BATCH`` bodies a transaction."""
    entries: list[Receipt] = []
    removed: list[str] = []
    skipped = dict(found.skipped)
    bodies = list(found.bodies)
    finished = finish(ledger, store, roots, step=step)
    for i in range(0, len(bodies), BATCH):
        p = plan(ledger, digests=bodies[i:i + BATCH])
        try:
            done = redact(ledger, store, key, roots, p, RETENTION, note or f"read before {found.cutoff}", step=step,
                          finish_first=False)
        except (BlobAlreadyRedacted, BlobOnHold) as e:  # redacted or held by another writer meanwhile
            skipped.update({b: str(e) for b in p.bodies})
            continue
        entries += done.entries
        removed += done.removed
        skipped.update(done.skipped)
    return Outcome(tuple(entries), tuple(removed), skipped, tuple(finished))


__all__ = ["Expiry", "Outcome", "Plan", "blobs_named", "current", "expire", "expiring", "finish", "hold",
           "page_blobs", "plan", "redact"]
