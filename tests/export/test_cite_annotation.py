# ruff: noqa: F811 (the fixture world is imported from cite_world)
"""``g6 cite --annotation FILE``: each quote of a W3C Web Annotation file or a Hypothesis export cited against the
home's reads, with the report reader of annotations (``g6.report.formats.annotation``) as the one parser.

Three inputs: g6's own ``manifest export --format annotation`` (a round trip), Hypothesis's W3C JSON-LD shape
(``fixtures/reports/annotations.jsonld``) and Hypothesis's API search reply (``fixtures/annotations``), each with
quotes that must be refused (a misquote, hidden text, no quote, a page never read): one line each, the rest
cited, nothing lost, exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from g6.cite.manifest import load_manifest
from g6.schemas import load
from tests.export.cite_world import CiteWorld, g6, world  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
DEMO = "http://127.0.0.1:8421"


def local_copy(world: CiteWorld, fixture: Path, tmp: Path) -> Path:
    """The fixture with the demo site's address replaced by the test site's (the tests' own loopback port)."""
    out = tmp / fixture.name
    out.write_text(fixture.read_text().replace(DEMO, world.site.base_url.rstrip("/")))
    return out


def cite(world: CiteWorld, *args: str) -> tuple[int, dict, str]:
    r = g6(world.home, "cite", *args, "--json")
    assert "Traceback" not in r.stderr
    doc = json.loads(r.stdout)
    schema = "cite-annotation.v1" if "--annotation" in args and r.returncode in (0, 1) else "refusal.v1"
    jsonschema.Draft202012Validator(load(schema), format_checker=jsonschema.FormatChecker()).validate(doc)
    return r.returncode, doc, r.stderr


def test_g6_s_own_export_cites_back_the_same_quotes(world: CiteWorld, tmp_path: Path) -> None:
    """Exported and cited again without a receipt id: each quote is found in the newest good read of its URL (the
    energy story's second read); the 404 cited as a failed read has no good read to cite, and says so."""
    exported = tmp_path / "a.jsonld"
    assert g6(world.home, "manifest", "export", str(world.manifest), "--format", "annotation",
              "-o", str(exported)).returncode == 0
    code, doc, _ = cite(world, "--annotation", str(exported), "--manifest", str(tmp_path / "m.json"))
    before = load_manifest(world.manifest).citations
    assert code == 1
    assert [c["citation"]["text"] for c in doc["cited"]] == [c.text for c in before[:3]]
    newest = {"energy": world.ids["energy"][-1], "article": world.ids["article"][-1]}
    assert [c["citation"]["receipt_id"] for c in doc["cited"]] == [newest["energy"]] * 2 + [newest["article"]]
    [refused] = doc["refused"]
    assert refused["source"].endswith("/missing") and refused["reason"].startswith("no good read of")
    assert len(load_manifest(tmp_path / "m.json").citations) == 3


def test_with_a_receipt_id_the_quotes_are_checked_against_that_read(world: CiteWorld, tmp_path: Path) -> None:
    """Against the energy story's first read: its two quotes are the very citations of the manifest (same ids);
    the others are about other pages, and refused as such."""
    exported = tmp_path / "a.jsonld"
    g6(world.home, "manifest", "export", str(world.manifest), "--format", "annotation", "-o", str(exported))
    rid = world.ids["energy"][0]
    code, doc, _ = cite(world, rid, "--annotation", str(exported), "--manifest", str(tmp_path / "m.json"))
    assert code == 1
    assert [c["citation"]["citation_id"] for c in doc["cited"]] == \
        [c.citation_id for c in load_manifest(world.manifest).citations[:2]]
    assert [r["reason"].split(";")[0] for r in doc["refused"]] == \
        [f"the annotation is about {world.site.url(p)}" for p in ("/article", "/missing")]


def test_a_hypothesis_api_export_is_cited_and_its_bad_quotes_refused(world: CiteWorld, tmp_path: Path) -> None:
    src = local_copy(world, ROOT / "fixtures" / "annotations" / "hypothesis-search.json", tmp_path)
    manifest = tmp_path / "m.json"
    code, doc, err = cite(world, "--annotation", str(src), "--manifest", str(manifest))
    assert code == 1
    [cited] = doc["cited"]
    assert cited["where"] == "rows[0].target[0]"
    assert cited["citation"]["text"] == "Most of them cited price as the main reason."
    assert cited["citation"]["receipt_id"] == world.ids["energy"][-1]
    reasons = {r["where"]: r["reason"] for r in doc["refused"]}
    assert list(reasons) == ["rows[1].target[0]", "rows[2].target[0]", "rows[3].target[0]", "rows[4].target[0]"]
    assert "not in the document" in reasons["rows[1].target[0]"]
    assert reasons["rows[2].target[0]"] == "no TextQuoteSelector: no quote to cite"
    assert "hidden from readers" in reasons["rows[3].target[0]"]
    assert reasons["rows[4].target[0]"].startswith(f"no good read of {world.site.url('/news/other.html')}")
    assert "1 quote cited, 4 refused" in err
    # what was cited holds: the manifest verifies against the home
    r = g6(world.home, "manifest", "verify", str(manifest))
    assert r.returncode == 1 and "FAILED" not in r.stdout.split("\n", 1)[1]  # unsigned; the citation is ok


def test_hypothesis_s_w3c_export_is_cited(world: CiteWorld, tmp_path: Path) -> None:
    """The W3C JSON-LD shape Hypothesis exports (a collection with its first page embedded): the true quote is
    cited, the misquote refused, and the annotation whose target is a bare IRI (no selector) refused."""
    src = local_copy(world, ROOT / "fixtures" / "reports" / "annotations.jsonld", tmp_path)
    code, doc, _ = cite(world, "--annotation", str(src), "--manifest", str(tmp_path / "m.json"))
    assert code == 1
    assert [c["citation"]["text"] for c in doc["cited"]] == \
        ["Of those asked, 12% said they had changed energy supplier in the past year."]
    assert [r["where"] for r in doc["refused"]] == ["first.items[1].target", "first.items[2].target"]


def test_all_cited_is_exit_0_and_text_mode_lists_them(world: CiteWorld, tmp_path: Path) -> None:
    doc = json.loads((ROOT / "fixtures" / "annotations" / "hypothesis-search.json").read_text())
    doc["rows"] = doc["rows"][:1]
    src = tmp_path / "one.json"
    src.write_text(json.dumps(doc).replace(DEMO, world.site.base_url.rstrip("/")))
    r = g6(world.home, "cite", "--annotation", str(src), "--manifest", str(tmp_path / "m.json"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("c_") and "Most of them cited price" in r.stdout


@pytest.mark.parametrize(("args", "says", "code"), [
    (["--annotation", "{md}"], "malformed JSON", 2),
    (["--annotation", "{json}"], "not an annotation report: at target: missing", 2),
    (["--annotation", "{hyp}", "--quote", "x"], "no --passage, --quote or --paper with it", 2),
    ([], "give RECEIPT_ID", 2),
    (["rcpt_00000000000000000000000000", "--annotation", "{hyp}"], "rcpt_00000000000000000000000000", 1),
])
def test_bad_input_is_one_line(world: CiteWorld, tmp_path: Path, args: list[str], says: str, code: int) -> None:
    (tmp_path / "r.md").write_text("# a report\n\nNo annotations here.\n")
    (tmp_path / "o.json").write_text('{"answer": 42}')
    files = {"md": str(tmp_path / "r.md"), "json": str(tmp_path / "o.json"),
             "hyp": str(ROOT / "fixtures" / "annotations" / "hypothesis-search.json")}
    r = g6(world.home, "cite", *[a.format(**files) for a in args], "--manifest", str(tmp_path / "m.json"))
    assert r.returncode == code and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "m.json").exists()
