"""``g6 report check REPORT``, ``g6 report verify RESULT`` and ``g6 report bundle RESULT``: a research report's
citations checked against the bytes, the signed result checked offline, and the evidence packed for another
machine."""

# Imports: g6.report, g6.fetch and g6.export only inside the commands, so `g6 --help` does not load them.
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from g6.cli.app import (
    EXIT_FAILED,
    Ctx,
    cli,
    emit_json,
    fail,
    fail_on,
    info,
    pass_ctx,
    progress,
    read_key,
    shown,
)
from g6.cli.options import json_option, quiet_option
from g6.cli.words import counted
from g6.errors import G6Error
from g6.ledger.note import NoteError

MAX_REPORT = 256 * 1024 * 1024  # bytes of a report read


@cli.group("report", short_help="Check a report's citations against the bytes.")
def report_group() -> None:
    """Research reports: check every citation against the bytes, verify a check's signed result, bundle the
    evidence of every citation."""


def _read_input(path: str, what: str, limit: int) -> bytes:
    try:
        if path == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
    except OSError as e:
        fail(f"cannot read {what} {path}: {e.strerror or e}")
    if len(data) > limit:
        fail(f"{what} {path} is over {limit:,} bytes")
    return data


def _documents(values: tuple[str, ...]) -> dict[int, str]:
    out: dict[int, str] = {}
    for v in values:
        n, sep, target = v.partition("=")
        if not sep or not n.strip().isdigit() or not target.strip():
            fail(f"--document {v[:80]!r}: give N=URL or N=RECEIPT_ID (document:N of the report)")
        out[int(n)] = target.strip()
    return out


class _Tenths:
    """Progress when stderr is not a terminal (a log, CI): a line at the start and at every tenth."""

    def __init__(self) -> None:
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        step = done * 10 // max(total, 1)
        if step > self.last:
            self.last = step
            info(f"g6: {done:,}/{counted(total, 'citation')} checked")


@report_group.command("check", short_help="Check every citation of a report.")
@click.argument("report_path", metavar="REPORT")
@click.option("--format", "fmt", default=None,
              help="The report's format (default: told from the content): openai-responses, openai-chat, anthropic, "
                   "gemini, perplexity, markdown, annotation, g6-manifest, or g6-report-model (the model's own JSON).")
@click.option("--base", "base", default=None, metavar="URL",
              help="The URL the report's relative links are resolved on (its own address); without it a relative "
                   "link is a citation that cannot be read.")
@click.option("--receipts-only", is_flag=True, help="Fetch nothing: every citation rests on a receipt in the home.")
@click.option("--bundle", "bundle_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Check against the evidence in this bundle (`g6 report bundle`) instead of the home; fetches "
                   "nothing.")
@click.option("--key", "keys", multiple=True,
              help="With --bundle: pin the publisher's key (repeatable): a checkpoint verifier key, an "
                   "ed25519:<base64> public key, or a file with one.")
@click.option("--trust-bundle-keys", is_flag=True, help="With --bundle: verify with the keys the bundle ships.")
@click.option("--replay", "replay_path", default=None, metavar="RESULT",
              help="Rest each citation on the receipt RESULT (an earlier signed check of this same report) rested it "
                   "on: a page read again since changes nothing.")
@click.option("--run", "run_id",
              help="Resume this run: no URL it read is read again (its verdicts are decided again from those "
                   "receipts).")
@click.option("--document", "documents", multiple=True, metavar="N=URL",
              help="Read document:N of the report (a document its author supplied) at this URL or receipt id.")
@click.option("--judge", "judge_cmd", default=None, metavar="CMD",
              help="An outside program asked, one JSON line per (claim, passage) pair, for its opinion; kept beside "
                   "each verdict, never in its place.")
@click.option("--judge-timeout", type=click.FloatRange(min=0.001), default=60.0, show_default=True,
              help="Seconds the judge has for each answer.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Write the signed result (schemas/report-check.v1) to this file (whole; never inside the "
                   "evidence home, never over what is not a regular file).")
@click.option("--manifest", "manifest_out", type=click.Path(path_type=Path), default=None,
              help="Write the signed manifest of the citations whose quotes were found to this file.")
@click.option("--html", "html_out", type=click.Path(path_type=Path), default=None,
              help="Write the report's text with each citation marked and linked to its evidence to this file.")
@click.option("--workers", type=click.IntRange(1, 256), default=8, show_default=True, help="Hosts in parallel.")
@click.option("--processes", type=click.IntRange(1, 64), default=None, metavar="N",
              help="Fetch and judge on N processes (default: one per core, at most --workers).")
@json_option("report-check.v1", help="Print the signed result as JSON")
@quiet_option
@pass_ctx
def check_cmd(c: Ctx, report_path: str, fmt: str | None, base: str | None, receipts_only: bool,
              bundle_path: Path | None, keys: tuple[str, ...], trust_bundle_keys: bool, replay_path: str | None,
              run_id: str | None, documents: tuple[str, ...], judge_cmd: str | None, judge_timeout: float,
              output: Path | None, manifest_out: Path | None, html_out: Path | None, workers: int,
              processes: int | None, as_json: bool) -> NoReturn:
    """Check every citation of REPORT ('-': stdin) against the bytes: each rests on a receipt in the home (the one
    the report pins, else the newest ok read of its URL) or on a fetch now; one verdict each: quote_found,
    quote_not_found, no_quote, source_failed or redirected_elsewhere.

    Exit 0 only when every citation's quote was found; 1 otherwise (a quote not found, a read that ended on
    another page, a source that failed or cannot be read, a citation without a quote, no citation at all); 2 a
    report that cannot be read."""
    from g6.report.judge import judge_argv

    protected = _protected(c)
    for path, flag in ((output, "-o"), (manifest_out, "--manifest"), (html_out, "--html")):
        if path is not None:
            _check_output(path, protected, flag)
    argv = judge_argv(judge_cmd) if judge_cmd is not None else None
    if (keys or trust_bundle_keys) and bundle_path is None:
        fail("--key and --trust-bundle-keys are for --bundle")
    mapped = _documents(documents)
    if base is not None:
        from g6.report.model import source_kind
        from g6.report.sources import Unusable, normalise_source

        got = normalise_source(base)
        if isinstance(got, Unusable) or source_kind(got.source) != "url":
            fail(f"--base {base[:80]!r}: not an http or https URL to resolve the report's relative links on")
    data = _read_input(report_path, "the report", MAX_REPORT)
    from g6.report.run import CheckInputs, load_report, run_check

    try:
        # messages name the report by the path given (as `cat` does); the signed result keeps only its file name
        report = load_report(data, fmt, _text(report_path) if report_path != "-" else "REPORT", base)
    except G6Error as e:
        fail_on(e)
    pinned = _pinned(keys)
    report_sha256 = "sha256:" + hashlib.sha256(data).hexdigest()
    if replay_path is not None:
        report = _replayed(c, report, report_sha256, replay_path, pinned, report_path)

    from g6.report.check import new_run_id

    resumed_id, run_id = run_id, run_id or new_run_id()  # made here, so a stopped run can say how to resume it
    # the name and the judge's command as the result shows them: a byte that is not UTF-8 in a file name or an
    # argument (read as a lone surrogate) is written as its escape, so the result can be signed (RFC 8785)
    inputs = CheckInputs(report, _text(Path(report_path).name) if report_path != "-" else "-",
                         report_sha256, len(data), receipts_only, bundle_path, pinned,
                         trust_bundle_keys, run_id, mapped, argv, _text(judge_cmd) if judge_cmd else None,
                         judge_timeout, workers,
                         processes or min(os.cpu_count() or 1, workers))
    policy = c.policy() if not (receipts_only or bundle_path) else None
    html = None
    with c.evidence(need_key=True) as ev:
        if resumed_id is not None and not _run_on_file(ev, resumed_id):
            # a mistyped id, or a run stopped before it decided anything: either way nothing is reused
            info(f"g6: nothing is on file for run {resumed_id} in this home: every citation is decided now")
        with progress("checking", "citations") as bar:
            try:
                result, run = run_check(ev, inputs, client=lambda: c.settings.client(policy), sources=c.sources(),
                                        progress=bar or _Tenths())
            except G6Error as e:
                fail_on(e)
            except KeyboardInterrupt:
                # shown with -q too: without the id the reads made so far cannot be reused
                click.echo(f"g6: stopped; to go on from here: g6 report check ... --run {run_id}", err=True)
                raise
        if run.resumed:
            info(f"g6: run {run.run_id}: {counted(run.resumed, 'citation')} {'was' if run.resumed == 1 else 'were'} "
                 "decided by an earlier run "
                 f"with this id; their pages were not read again, their verdicts were decided again "
                 f"from those receipts")
        if html_out is not None:
            from g6.export.report_html import render_report_check

            html = render_report_check(result, run.report.text)
    _write_outputs(result, protected, output, manifest_out, html_out, html)
    if as_json:
        emit_json(result)
    else:
        _print_result(result)
    sys.exit(result["exit_code"])


def _replayed(c: Ctx, report: Any, report_sha256: str, replay_path: str, pinned: list[Any],
              report_path: str) -> Any:
    """``report`` pinned as the ``--replay`` result's check rested it (``g6.report.replay``); the result verified
    with the keys pinned with --key (a bundle's publisher's, when checking a bundle) and the home's own trusted
    keys, since the home that checked signed it."""
    from g6.report.replay import pinned_by_home
    from g6.report.result import load_result

    if replay_path == "-" and report_path == "-":  # stdin is read once, for the report: the result would be empty
        fail("--replay - and REPORT - cannot both be stdin: give one of them as a file")
    data = _read_input(replay_path, "the --replay result", 512 * 1024 * 1024)
    try:
        result = load_result(data)
    except G6Error as e:
        fail(f"--replay {_text(replay_path)}: {e}")
    try:
        with c.evidence() as ev:
            report, n = pinned_by_home(ev, report, report_sha256, result, {p.key.key_id: p.key for p in pinned})
    except G6Error as e:
        fail_on(e)
    info(f"g6: --replay: {counted(n, 'citation')} {'rests' if n == 1 else 'rest'} on the receipt "
         f"{_text(replay_path)} rested {'it' if n == 1 else 'them'} on")
    return report


def _run_on_file(home: Any, run_id: str) -> bool:
    from g6.report.runfile import run_state

    try:
        return run_state(home, run_id).path.exists()
    except G6Error as e:
        fail_on(e)


def _pinned(keys: tuple[str, ...]) -> list[Any]:
    from g6.prove.bundle import PinnedKey

    pinned = []
    for k in keys:
        try:
            key, key_origin = read_key(k)
        except (G6Error, NoteError, ValueError, OSError) as e:
            fail(f"bad --key: {e}")
        pinned.append(PinnedKey(key, key_origin))
    return pinned


def _protected(c: Ctx) -> tuple[Path, ...]:
    """The evidence home as files and folders (``--home``/``G6_HOME``, and a ledger or blob folder the settings
    put elsewhere): no output of a report command is written there."""
    from g6.report.outputs import home_paths

    return home_paths(c.settings.home, c.settings.values)


def _check_output(path: Path, protected: tuple[Path, ...], flag: str) -> None:
    from g6.report.outputs import check_output

    try:
        check_output(path, protected, flag)
    except G6Error as e:
        fail_on(e)


def _write(path: Path, text: str, protected: tuple[Path, ...], flag: str) -> None:
    """One output written whole (checked again, a temporary file beside it, then a rename), or the command
    ends: exit 2 for a path refused now, 1 for a write that failed (the old file is left as it was)."""
    from g6.report.outputs import write_output

    try:
        write_output(path, text, protected, flag)
    except G6Error as e:
        fail_on(e)
    except OSError as e:
        fail(f"cannot write {flag} {path}: {e.strerror or e}", EXIT_FAILED)


def _write_outputs(result: dict[str, Any], protected: tuple[Path, ...], output: Path | None,
                   manifest_out: Path | None, html_out: Path | None, html: str | None) -> None:
    import json

    if output is not None:
        _write(output, json.dumps(result, indent=2, ensure_ascii=False) + "\n", protected, "-o")
        info(f"wrote {output}")
    if manifest_out is not None:
        from g6.cite.manifest import Manifest

        if result["manifest"] is None:
            info(f"g6: no quote was found in a page, so no manifest is written to {manifest_out}")
        else:
            text = json.dumps(Manifest.from_json(result["manifest"]).to_json(), indent=2, ensure_ascii=False)
            _write(manifest_out, text + "\n", protected, "--manifest")
            info(f"manifest: {manifest_out} ({counted(len(result['manifest']['citations']), 'citation')})")
    if html_out is not None and html is not None:
        _write(html_out, html, protected, "--html")
        info(f"report: {html_out}")


def _cut(text: str, limit: int) -> str:
    """``text`` as a console line shows it: at most ``limit`` characters, an ellipsis where it was cut (a quote
    shown cut without one reads as a shorter quote)."""
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _print_result(result: dict[str, Any]) -> None:
    """A line per citation (its verdict and source), its reason, quote, first hint and judge under it, then the
    figures."""
    for cj in result["citations"]:
        label = f"[{cj['n']}]"
        line = f"{label} {cj['verdict']:<{max(14, 23 - len(label))}} {_cut(cj['source'], 100)}"
        found = cj.get("found")
        if found:
            line += f" ({found['text_source']} text {found['start']}-{found['end']}, {found['match']})"
        click.echo(shown(line))
        if cj.get("address"):
            click.echo(shown(f"{'':<4}written as {_cut(cj['address'], 200)}"))
        if not found:
            click.echo(shown(f"{'':<4}{_cut(cj['reason'], 300)}"))
        if cj.get("quote"):
            click.echo(shown(f"{'':<4}quote: \"{_cut(' '.join(cj['quote'].split()), 100)}\""))
        hint = cj["hints"][0] if cj.get("hints") else None
        if hint is not None:
            click.echo(shown(f"{'':<4}hint, not support ({hint['similarity']:.2f}): \"{_cut(hint['text'], 90)}\""))
        if cj.get("judge"):
            j = cj["judge"]
            said = j["opinion"].get("label") if "opinion" in j else f"error {j['error']['code']}"
            click.echo(shown(f"{'':<4}judge's opinion: {said}"))
    f = result["figures"]
    click.echo(f"{counted(f['citations'], 'citation')}: quote_found {f['quote_found']} ({f['quote_found_share']:.0%}), "
               f"quote_not_found {f['quote_not_found']}, no_quote {f['no_quote']}, source_failed "
               f"{f['source_failed']}, redirected_elsewhere {f['redirected_elsewhere']}; sources {f['sources']} "
               f"({f['sources_failed']} failed); claims without citations {f['claims_without_citations']}")
    ev = result["evidence"]
    if ev["source"] == "bundle":  # how far the evidence can be trusted is part of the answer, not a diagnostic
        b = ev["bundle"]
        ids = ", ".join(k["key_id"] for k in b["keys"])
        click.echo(shown(f"evidence: the bundle {b['sha256']}, its keys pinned with --key ({ids})"
                         if b["trust"] == "pinned" else
                         f"evidence: the bundle {b['sha256']}, verified only with the keys it ships ({ids}, "
                         f"--trust-bundle-keys): anyone can make a bundle that holds with its own keys"))
    info(f"result {result['result_id']}, run {result['run_id']} (resume with --run {result['run_id']})")


@report_group.command("verify", short_help="Verify a signed check result offline.")
@click.argument("result_path", metavar="RESULT")
@click.option("--key", "keys", multiple=True,
              help="Pin the key the result must be signed with (repeatable): ed25519:<base64>, a checkpoint "
                   "verifier key, or a file with one. Default: the keys this home trusts.")
@json_option("report-verify.v1", help="Print the checks as JSON")
@pass_ctx
def verify_cmd(c: Ctx, result_path: str, keys: tuple[str, ...], as_json: bool) -> NoReturn:
    """Check a signed result offline: its signature, its figures against its citations, its manifest. Fails closed:
    exit 0 only when every check holds."""
    from g6.report.result import load_result, verify_result

    data = _read_input(result_path, "the result", 512 * 1024 * 1024)
    try:
        result = load_result(data)
    except G6Error as e:
        fail_on(e)
    if keys:
        trusted = {p.key.key_id: p.key for p in _pinned(keys)}
        said = "pinned with --key"
    else:
        with c.evidence() as ev:
            trusted = ev.keys.trusted() if ev.keys.trusted_dir.exists() else {}
        said = "a key this home trusts"
    checks = verify_result(result, trusted, said)
    ok = all(ch.ok for ch in checks)
    rid = result.get("result_id")
    if as_json:  # the result's own words (its id, a key id in a detail) are untrusted: no lone surrogate is printed
        emit_json({"ok": ok, "result_id": _text(rid) if isinstance(rid, str) else None,
                   "checks": [{**ch.to_json(), "detail": _text(ch.detail)} for ch in checks]})
    else:
        for ch in checks:
            click.echo(shown(f"{ch.check:<10} {'ok' if ch.ok else 'FAILED'}{': ' + ch.detail if ch.detail else ''}"))
        click.echo(shown(f"result {str(rid)[:80]} {'holds' if ok else 'FAILED'}"))
    sys.exit(0 if ok else 1)


def _text(s: str) -> str:
    """``s`` with any lone surrogate (a ``\\ud800`` escape in a hostile file) written as its escape."""
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


@report_group.command("bundle", short_help="Bundle the evidence of a check result.")
@click.argument("result_path", metavar="RESULT")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="The zip to write.")
@json_option("bundle-index.v1", help="Print the bundle's index as JSON")
@quiet_option
@pass_ctx
def bundle_cmd(c: Ctx, result_path: str, output: Path, as_json: bool) -> None:
    """Pack the evidence of every citation of a result this home signed into one evidence bundle: the manifest
    of the found citations and, beside it, every other read the verdicts rest on, each with its inclusion proof.
    `g6 bundle verify` checks it; `g6 report check REPORT --bundle ZIP --key KEY` checks the report against it
    on another machine."""
    import tempfile

    from g6.cite.manifest import Manifest, save_manifest
    from g6.prove.bundle import build_bundle
    from g6.report.bundled import result_receipts
    from g6.report.result import load_result, verify_result

    _check_output(output, _protected(c), "-o")
    data = _read_input(result_path, "the result", 512 * 1024 * 1024)
    try:
        result = load_result(data)
    except G6Error as e:
        fail_on(e)
    with c.evidence(need_key=True) as ev:
        bad = [ch for ch in verify_result(result, ev.trusted(), "a key this home trusts") if not ch.ok]
        if bad:
            fail(f"{result_path} is not a result this home can vouch for ({bad[0].check}: {bad[0].detail})", 1)
        manifest = Manifest.from_json(result["manifest"]) if result["manifest"] is not None else \
            Manifest.new().signed(ev.signing_key())
        fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".manifest.json")
        os.close(fd)
        try:
            save_manifest(manifest, tmp)
            with progress("bundling", "steps") as bar:
                index = build_bundle(ev, tmp, output, progress=bar, also=result_receipts(result))
        except G6Error as e:
            fail_on(e)
        finally:
            Path(tmp).unlink(missing_ok=True)
    if as_json:
        emit_json(index)
    else:
        click.echo(f"wrote {output}: {counted(len(index['files']), 'file')}, the evidence of "
                   f"{counted(len(result['citations']), 'citation')} (manifest {index['manifest_id']})")
