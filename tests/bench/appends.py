#!/usr/bin/env python3
"""Benchmark: commit cost over many successive small appends to one table.

    python3 tests/bench/appends.py --appends 1000 --rows 10 \
        --binary target/release/pipeline --work /tmp/pipeline-appends [--pyiceberg 366]

The engine: a project with one ingest job (CSV -> bronze.events, partitioned by day). Each
step drops one new CSV file of --rows rows into the landing folder and times
`pipeline run events` (a child process: wall seconds), which loads just that file (the ledger
skips the others without reading them) and commits one append snapshot.

The peer (with --pyiceberg K): PyIceberg 0.12 on its own SQLite catalog, K successive
`table.append()` calls of the same row count, each timed in-process.

Reports the median of the first 10 and of the last 10 steps and their ratio (the goal for
the engine: last <= 2x first), plus checkpoints, and writes WORK/appends-results.json.
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

SPEC = """[pipeline]
name = "events"
{retention}
[[ingest]]
table = "bronze.events"
format = "csv"
path = "landing/*.csv"
schema = { id = "long", ts = "timestamp", amount = "decimal(10,2)" }
partition_by = ["day(ts)"]
"""


def rows_csv(step: int, rows: int) -> str:
    day = 1 + step % 28
    lines = ["id,ts,amount"]
    for r in range(rows):
        lines.append(f"{step * rows + r},2026-01-{day:02d} {r % 24:02d}:00:00,{(r % 97) + 0.5:.2f}")
    return "\n".join(lines) + "\n"


def shape(times: list) -> dict:
    first, last = statistics.median(times[:10]), statistics.median(times[-10:])
    checkpoints = {str(i): round(statistics.median(times[max(0, i - 10):i]), 4)
                   for i in (10, 100, 250, 500, 750, 1000, len(times)) if i <= len(times)}
    return {"steps": len(times), "first10_median_s": round(first, 4),
            "last10_median_s": round(last, 4), "ratio_last_first": round(last / first, 3),
            "checkpoints_median_of_previous_10": checkpoints}


def engine(binary: Path, work: Path, appends: int, rows: int, max_snapshots: int) -> dict:
    project = work / "engine"
    shutil.rmtree(project, ignore_errors=True)
    (project / "pipelines").mkdir(parents=True)
    (project / "landing").mkdir()
    retention = f"\n[retention]\nmax_snapshots = {max_snapshots}\n" if max_snapshots else ""
    (project / "pipelines" / "events.toml").write_text(SPEC.replace("{retention}", retention))
    times = []
    for step in range(appends):
        (project / "landing" / f"events_{step:05d}.csv").write_text(rows_csv(step, rows))
        t0 = time.perf_counter()
        out = subprocess.run([str(binary), "--project", str(project), "run", "events", "--json"],
                             capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if out.returncode != 0:
            raise SystemExit(f"step {step} failed:\n{out.stderr}")
        if step % 100 == 99:
            print(f"engine: {step + 1} appends, last {times[-1]:.3f}s", flush=True)
    count = json.loads(subprocess.run(
        [str(binary), "--project", str(project), "query", "SELECT count(*) FROM bronze.events",
         "--json"], capture_output=True, text=True, check=True).stdout)["rows"][0][0]
    history = json.loads(subprocess.run(
        [str(binary), "--project", str(project), "history", "bronze.events", "--json"],
        capture_output=True, text=True, check=True).stdout)
    result = shape(times)
    result["rows"] = int(count)
    result["snapshots"] = len(history)
    assert result["rows"] == appends * rows, result
    assert result["snapshots"] == appends or max_snapshots, result
    return result


def pyiceberg(work: Path, appends: int, rows: int) -> dict:
    import pyarrow as pa
    from decimal import Decimal
    from datetime import datetime
    from pyiceberg.catalog.sql import SqlCatalog

    folder = work / "pyiceberg"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{folder}/catalog.db",
                         warehouse=f"file://{folder}")
    catalog.create_namespace("bronze")
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us")),
                        ("amount", pa.decimal128(10, 2))])
    table = catalog.create_table("bronze.events", schema=schema)
    times = []
    for step in range(appends):
        day = 1 + step % 28
        batch = pa.table({
            "id": [step * rows + r for r in range(rows)],
            "ts": [datetime(2026, 1, day, r % 24) for r in range(rows)],
            "amount": [Decimal(f"{(r % 97) + 0.5:.2f}") for r in range(rows)],
        }, schema=schema)
        t0 = time.perf_counter()
        table.append(batch)
        times.append(time.perf_counter() - t0)
        if step % 100 == 99:
            print(f"pyiceberg: {step + 1} appends, last {times[-1]:.3f}s", flush=True)
    return shape(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--appends", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--binary", type=Path, default=REPO / "target/release/pipeline")
    ap.add_argument("--work", type=Path, default=Path("/tmp/pipeline-appends"))
    ap.add_argument("--max-snapshots", type=int, default=0, metavar="N",
                    help="give the engine's spec [retention] max_snapshots = N (0: keep all)")
    ap.add_argument("--pyiceberg", type=int, default=0, metavar="K",
                    help="also time K PyIceberg appends (0: skip)")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    result = {"engine": engine(args.binary.resolve(), args.work, args.appends, args.rows,
                               args.max_snapshots),
              "max_snapshots": args.max_snapshots or None}
    if args.pyiceberg:
        result["pyiceberg"] = pyiceberg(args.work, args.pyiceberg, args.rows)
    print(json.dumps(result, indent=2))
    (args.work / "appends-results.json").write_text(json.dumps(result, indent=2))
    e = result["engine"]
    print(f"\nengine: last 10 / first 10 appends = {e['ratio_last_first']:.2f} (goal <= 2)")
    if "pyiceberg" in result:
        print(f"pyiceberg: last 10 / first 10 appends = "
              f"{result['pyiceberg']['ratio_last_first']:.2f}")


if __name__ == "__main__":
    main()
