"""`frameport demo` speaks plainly, ends with three next steps, and with --keep leaves its
service running, reachable through the settings it writes (never printing the key)."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from frameport import Client
from frameport._demo import DEMO_FILTER, run_demo, sample_people

JARGON = ("cursorAfter", "$sequence", "decoder", "Arrow", "query member")


def test_the_demo_says_what_it_did_and_what_to_do_next(tmp_path: Path) -> None:
    said: list[str] = []
    parquet = run_demo(tmp_path / "out", 2_000, say=said.append)
    text = "\n".join(said)
    own = [line for line in text.splitlines() if not line.startswith("  ")]  # not explain()
    assert not [line for line in own if any(word in line for word in JARGON)]
    explained = "\n".join(line for line in text.splitlines() if line.startswith("  "))
    assert "cursorAfter" not in explained and "decoder" not in explained
    # The text condition is sent, then checked again by the client: the demo says why.
    assert '"method":"equal","column":"city"' in explained.replace(" ", "")
    assert "Then the client keeps the rows where city in ['Oslo', 'Bergen']. Why:" in explained
    assert "without regard to case or accents" in explained
    assert own[0].startswith("Started a local service at http://127.0.0.1:")
    assert "Made 2,000 sample people and wrote them to the new table demo/people" in text
    expected = sample_people(2_000).query(DEMO_FILTER)
    assert f"Saved the {len(expected):,} people it found to {parquet}" in text
    assert "the rows are the same." in text
    assert pq.read_metadata(parquet).num_rows == len(expected)
    steps = re.split(r"\n  (?=\d\. )", text.split("Next:\n", 1)[1].rstrip())
    assert [step.split(".")[0].strip() for step in steps] == ["1", "2", "3"]
    assert "notebooks/quickstart.ipynb" in steps[0]
    assert "frameport ls demo" in steps[1] and "frameport demo --keep" in steps[1]
    assert "guides" in steps[2]


def test_demo_keep_leaves_the_service_running_until_ctrl_c(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = [sys.executable, "-m", "frameport.cli", "demo", "--keep", "--rows", "500"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "FRAMEPORT_PROGRESS": "0"}
    demo = subprocess.Popen(
        [*command, "--out", str(out)], env=env, cwd=tmp_path, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert demo.stdout is not None
    printed = []
    for line in demo.stdout:
        printed.append(line)
        if line.startswith("Press Ctrl-C"):
            break
    settings_file = out / "frameport.env"
    assert stat.S_IMODE(settings_file.stat().st_mode) == 0o600
    settings = dict(
        line.removeprefix("export ").split("=", 1)
        for line in settings_file.read_text().splitlines()
    )
    assert settings["FRAMEPORT_KEY"] not in "".join(printed)
    assert f"source {settings_file}" in "".join(printed)
    listed = subprocess.run(
        [sys.executable, "-m", "frameport.cli", "ls", "demo"],
        env={**os.environ, **settings}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "people" in listed.stdout
    with Client(
        settings["FRAMEPORT_ENDPOINT"], settings["FRAMEPORT_PROJECT"], key=settings["FRAMEPORT_KEY"]
    ) as client:
        assert client.table("demo", "people").count() == 500
    demo.send_signal(signal.SIGINT)
    _, err = demo.communicate(timeout=60)
    assert demo.returncode == 130
    assert err.strip().endswith(f"stopped; the local service is gone; the files in {out} stay")
    assert not settings_file.exists()
    assert (out / "people-oslo-bergen-over-30.parquet").exists()
