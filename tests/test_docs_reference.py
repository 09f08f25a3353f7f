"""Every public name is documented, and every one is in the API reference; every citation of
the service interface reference names one of its headings.

The public names are `frameport.__all__`, `frameport.widgets.__all__`,
`frameport.local.__all__`, `frameport.ray.__all__` and `frameport.spark.__all__`; the public
methods and properties of their classes count too.
The docstrings are read with griffe and the extensions the reference is built with, so a
name documented here is a name documented on the site. That runs in a child process,
because one of those extensions renames the modules of the exported classes' methods.
"""

from __future__ import annotations

import fcntl
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import frameport
import frameport.local
import frameport.ray
import frameport.spark
import frameport.widgets

# Its session fixture loads the package with griffe in a child process: one worker runs them.
pytestmark = pytest.mark.xdist_group("docs_reference")

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "docs" / "reference"
PUBLIC_MODULES = {
    "frameport": frameport.__all__,
    "frameport.widgets": frameport.widgets.__all__,
    "frameport.local": frameport.local.__all__,
    "frameport.ray": frameport.ray.__all__,
    "frameport.spark": frameport.spark.__all__,
}
PUBLIC_NAMES = [f"{module}.{name}" for module, names in PUBLIC_MODULES.items() for name in names]

# Prints, as JSON, what the API reference shows once griffe has loaded the package as the
# documentation build does: "missing", the public paths among argv[1:] (and their classes'
# public members) that have no docstring; "returns", the return types of some sync methods;
# "awaiting", the members of the sync classes whose docstring awaits anything.
REFERENCE_FINDINGS = """
import json, sys, warnings
import griffe

warnings.simplefilter("ignore", DeprecationWarning)  # ipywidgets' deprecated class attributes
hooks = "docs/hooks/griffe_docstrings.py"
extensions = griffe.load_extensions(f"{hooks}:PublicMembers", f"{hooks}:SourceDocstrings")
package = griffe.load("frameport", force_inspection=True, extensions=extensions)

def documented(obj):
    return bool(obj.docstring and obj.docstring.value.strip())

missing = []
for path in sys.argv[1:]:
    obj = package[path.removeprefix("frameport.")]
    if not documented(obj):
        missing.append(path)
    if obj.is_class:
        for name, member in obj.members.items():
            if name.startswith("_") or (member.is_alias and not member.resolved):
                continue
            if not documented(member):
                missing.append(f"{path}.{name}")
shown = {
    path: str(package[path].returns)
    for path in ("Client.table", "Client.create_bucket", "TableQuery.where", "Table.iter_batches")
}
awaiting = [
    f"{cls}.{name}"
    for cls in ("Client", "Table", "TableQuery", "Bucket", "Function")
    for name, member in package[cls].all_members.items()
    if not name.startswith("_")
    and member.docstring is not None
    and "await " in member.docstring.value
]
print(json.dumps({"missing": missing, "returns": shown, "awaiting": awaiting}))
"""


def read_findings() -> dict[str, Any]:
    found = subprocess.run(
        [sys.executable, "-c", REFERENCE_FINDINGS, *PUBLIC_NAMES],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    shown: dict[str, Any] = json.loads(found.stdout)
    return shown


@pytest.fixture(scope="session")
def findings(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, Any]:
    """What the reference shows, read once for the run (loading the package takes long): the
    first xdist worker to need it reads it, the others find it in the run's temporary root."""
    if worker_id == "master":
        return read_findings()
    shared = tmp_path_factory.getbasetemp().parent / "reference-findings.json"
    with (shared.parent / "reference-findings.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shared.exists():
            shared.write_text(json.dumps(read_findings()))
        cached: dict[str, Any] = json.loads(shared.read_text())
        return cached


def test_every_public_name_has_a_docstring(findings: dict[str, Any]) -> None:
    assert findings["missing"] == []


def test_every_public_name_is_in_the_reference() -> None:
    text = "\n".join(page.read_text(encoding="utf-8") for page in REFERENCE.glob("*.md"))
    rendered = set(re.findall(r"^::: (\S+)$", text, flags=re.MULTILINE))
    assert sorted(set(PUBLIC_NAMES) - rendered) == []
    assert sorted(rendered - set(PUBLIC_NAMES)) == []  # the reference shows no private module


def test_the_reference_shows_the_sync_types_and_no_await(findings: dict[str, Any]) -> None:
    assert findings["returns"] == {
        "Client.table": "Table",
        "Client.create_bucket": "Bucket",
        "TableQuery.where": "TableQuery",
        "Table.iter_batches": "Iterator[pd.DataFrame | pa.RecordBatch]",
    }
    assert findings["awaiting"] == []


SERVICE_INTERFACE = REFERENCE / "service-interface.md"
# Where the code cites the service interface reference, by heading: `(service interface,
# "Chunked uploads", "Rate limits")`.
CITING_SOURCES = ("src", "tests", "benchmarks")
CITATION = re.compile(r'service interface, ((?:"[^"\n]+"(?:, )?)+)')
CITED_HEADING = re.compile(r'"([^"]+)"')
# Any other mention of it is a citation in another form.
MENTION = re.compile(r"service\s+interface\b(?!, \")", re.I)
# A comment or docstring line break, so that a citation may wrap.
LINE_BREAK = re.compile(r"\s*\n\s*(?:#:?\s*)?")
# Citations of documents the repository does not hold: section signs, numbered decisions.
FOREIGN_CITATION = re.compile(r"§|\bdecisions? \d|\b(?:wire|the) contract\b|\bcontract's", re.I)


def service_interface_headings() -> set[str]:
    text = SERVICE_INTERFACE.read_text(encoding="utf-8")
    return set(re.findall(r"^#{2,6} (.+?)\s*$", text, flags=re.MULTILINE))


def cited_headings(text: str) -> list[str]:
    """The headings the service interface citations in `text` name, in order."""
    joined = LINE_BREAK.sub(" ", text)
    return [
        heading
        for citation in CITATION.finditer(joined)
        for heading in CITED_HEADING.findall(citation.group(1))
    ]


def unresolved_citations(text: str, headings: set[str]) -> list[str]:
    """The cited headings that `headings` lacks, and the mentions not in the citation form."""
    joined = LINE_BREAK.sub(" ", text)
    malformed = [joined[found.start() : found.end() + 20] for found in MENTION.finditer(joined)]
    return [heading for heading in cited_headings(text) if heading not in headings] + malformed


def citing_files() -> list[Path]:
    """The Python files of the citing trees, but for this one, whose examples cite on purpose."""
    here = Path(__file__).resolve()
    return [
        path
        for tree in CITING_SOURCES
        for path in sorted((REPO / tree).rglob("*.py"))
        if path != here
    ]


def test_every_citation_names_a_heading_of_the_service_interface() -> None:
    headings = service_interface_headings()
    texts = {path.relative_to(REPO): path.read_text(encoding="utf-8") for path in citing_files()}
    assert sum(len(cited_headings(text)) for text in texts.values()) > 0
    unresolved = {
        str(path): missing
        for path, text in texts.items()
        if (missing := unresolved_citations(text, headings))
    }
    assert unresolved == {}


def test_a_citation_of_a_missing_heading_is_found() -> None:
    headings = service_interface_headings()
    assert {"Chunked uploads", "Rate limits", "Realtime events"} <= headings
    text = '''"""Parts (service interface, "Chunked uploads", "Part sizes").

    Limits (service interface,
    "Rate limits", "Throttling")."""
    #: Events (service interface, "Realtime events",
    #: "Replay")
    '''
    other_form = "Rows (service interface: *Rows*)"
    assert cited_headings(text) == [
        "Chunked uploads", "Part sizes", "Rate limits", "Throttling", "Realtime events", "Replay"
    ]  # fmt: skip
    assert unresolved_citations(text, headings) == ["Part sizes", "Throttling", "Replay"]
    assert unresolved_citations(other_form, headings) == ["service interface: *Rows*)"]


def test_nothing_cites_a_document_outside_the_repository() -> None:
    pages = sorted((REPO / "docs").rglob("*.md"))
    foreign = {
        str(path.relative_to(REPO)): found
        for path in [*citing_files(), *pages]
        if (found := FOREIGN_CITATION.findall(path.read_text(encoding="utf-8")))
    }
    assert foreign == {}
    old_forms = "as contract §8 says; upserts answer 200 (decision 6; decisions 3 and 7)"
    assert FOREIGN_CITATION.findall(old_forms) == ["§", "decision 6", "decisions 3"]
