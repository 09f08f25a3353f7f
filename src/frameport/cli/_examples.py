"""An example for the end of every command's `--help` (argparse epilogs, after "example:")."""

from __future__ import annotations

import argparse

EXAMPLES: dict[str, str] = {
    "serve": """\
  frameport serve --port 8080 --data ./frameport-data --access-log
  # then, in another shell, with the key it printed:
  FRAMEPORT_ENDPOINT=http://127.0.0.1:8080/v1 FRAMEPORT_PROJECT=demo FRAMEPORT_KEY=... \\
    frameport export crm people -o people.parquet""",
    "ls": """\
  frameport ls              # the databases and the buckets
  frameport ls crm          # the tables of database crm
  frameport ls crm people   # the columns of table crm/people, with their pandas dtypes""",
    "head": '  frameport head crm people -n 10 --where "age > 30" --columns name,age',
    "count": "  frameport count crm people --where \"city == 'Oslo'\"",
    "drop": """\
  frameport drop crm people          # says what it would delete, and deletes nothing
  frameport drop crm people --yes    # deletes table crm/people
  frameport drop --bucket reports --yes""",
    "export": """\
  export FRAMEPORT_ENDPOINT=http://127.0.0.1:8080/v1 FRAMEPORT_PROJECT=demo FRAMEPORT_KEY=...
  frameport export crm people -o people.parquet --where "age > 30" --columns name,age
  frameport export crm people -o people.parquet --resume   # continues a stopped export""",
    "import": """\
  frameport import crm people people.parquet --id-hash email           # rerun-safe
  frameport import crm people s3://bucket/people.csv --resume --rejects rejects.csv
  frameport import crm people people.ndjson --atomic --dry-run""",
    "sync": """\
  frameport sync crm people ./people_delta --where "age > 30" --columns name,age
  # run it again later: only the rows changed since are read and merged""",
    "backup": """\
  frameport backup ./backups/crm                  # a full snapshot, then only what changed
  frameport backup s3://backups/crm --databases crm --buckets reports""",
    "restore": """\
  frameport restore ./backups/crm --dry-run       # the plan: what it creates, what conflicts
  frameport restore ./backups/crm --on-conflict skip""",
    "verify": """\
  frameport verify ./backups/crm                  # names every file missing or altered""",
    "copy": """\
  FRAMEPORT_TO_KEY=... frameport copy --to-endpoint https://other.example/v1 \\
    --to-project crm --databases crm --on-conflict skip""",
    "upload": """\
  frameport upload reports big.csv photos/*.png --permission 'read("any")' --resume""",
    "login": """\
  frameport login --endpoint http://127.0.0.1:8080/v1 --project demo --email ada@example.com
  frameport export crm people -o people.parquet   # uses the saved session""",
    "logout": "  frameport logout --endpoint http://127.0.0.1:8080/v1 --project demo",
    "demo": """\
  frameport demo --rows 10000 --out ./out
  frameport demo --keep      # then, in another shell: source out/frameport.env""",
}


def add_examples(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """End each command's help with its example, kept as written (line breaks and all)."""
    for name, parser in commands.choices.items():
        parser.epilog = f"example:\n{EXAMPLES[name]}"
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
