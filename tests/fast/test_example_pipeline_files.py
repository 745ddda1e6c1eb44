"""examples/clickstream-pipeline/pipeline.sha256 lists every file of the example's pipeline (the release under
test, pipeline/, and the one before it, previous-release/) with its SHA-256
(`sha256sum -c pipeline.sha256` in the project checks it): the committed files match it, and `changes` (which
tests/connect/test_pipeline_example.py asks of the project after its runs) finds a changed byte, a new file
and a missing file."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "clickstream-pipeline"
FOLDERS = ("pipeline", "previous-release")


def changes(project: Path) -> list[str]:
    """What differs between the project's pipeline folders (pipeline/, previous-release/) and its pipeline.sha256: a file whose bytes differ,
    one listed but missing, one present but not listed. Python's bytecode caches (__pycache__, written when a
    definition file is imported) are not the pipeline's files."""
    listed = {}
    for number, line in enumerate((project / "pipeline.sha256").read_text().splitlines(), 1):
        digest, sep, name = line.partition("  ")
        assert sep and len(digest) == 64, f"{project / 'pipeline.sha256'}:{number}: not `<sha256>  <path>`: {line!r}"
        listed[name] = digest
    present = {p.relative_to(project).as_posix() for folder in FOLDERS for p in (project / folder).rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    out = [f"{name}: not in pipeline.sha256" for name in sorted(present - set(listed))]
    for name, digest in sorted(listed.items()):
        if name not in present:
            out.append(f"{name}: missing")
        elif hashlib.sha256((project / name).read_bytes()).hexdigest() != digest:
            out.append(f"{name}: changed")
    return out


def test_the_committed_pipeline_matches_its_hash_list():
    # after an intended change to the pipeline: `sha256sum {pipeline,previous-release}/spark-pipeline.yml
    # {pipeline,previous-release}/transformations/* > pipeline.sha256` in examples/clickstream-pipeline
    assert changes(EXAMPLE) == []
    assert len((EXAMPLE / "pipeline.sha256").read_text().splitlines()) >= 10  # per release the spec and four files


def test_a_changed_byte_a_new_file_and_a_missing_file_are_each_found(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    definitions = project / "pipeline" / "transformations"
    silver = definitions / "silver_clicks.py"
    silver.write_bytes(silver.read_bytes().replace(b"10 minutes", b"10 minutes "))
    (definitions / "extra.py").write_text("")
    (definitions / "page_totals.sql").unlink()
    (project / "previous-release" / "spark-pipeline.yml").write_text("name: clickstream\n")
    (definitions / "__pycache__").mkdir()
    (definitions / "__pycache__" / "silver_clicks.cpython-311.pyc").write_bytes(b"\0")
    assert changes(project) == ["pipeline/transformations/extra.py: not in pipeline.sha256",
                                "pipeline/transformations/page_totals.sql: missing",
                                "pipeline/transformations/silver_clicks.py: changed",
                                "previous-release/spark-pipeline.yml: changed"]
