#!/usr/bin/env python3
"""Benchmark: `pipeline backfill` of one month against a full run, on generated retail data.

    python3 tests/bench/backfill.py --n 5000000 --month 2025-06 \
        --binary target/release/pipeline --work /tmp/pipeline-bench [--repeat 3] [--seed 42]

For each repeat: delete WORK/N/warehouse, time a full `run retail`, then time
`backfill retail --from <month>-01 --to <last day>` on that warehouse (one child process each,
wall/CPU/peak RSS from os.wait4). After the first backfill it checks that

  * every gold and silver table has the same row count and column sums as before (the inputs
    did not change, so a correct backfill changes no value), and
  * the data files of silver.orders and gold.fact_orders outside the month are the very same
    files (path and SHA-256) as before, and every file of the month is new.

Prints the medians and the ratio backfill / full (the goal is <= 1/8), and the `--plan` of the
backfill (files and bytes of bronze read for the month vs the whole table). Results go to
WORK/backfill-results.json. The spec and SQL are copied from the repository first, so the run
uses the current `pipelines/retail.toml` whatever version generated the data.
"""

import argparse
import calendar
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from run import ensure_data, log, measure, tail, warm_cache  # noqa: E402

TABLES = ["silver.orders", "silver.customers", "gold.fact_orders", "gold.customer_metrics",
          "gold.monthly_revenue", "gold.repeat_buyers"]


def cli(binary: Path, data: Path, *args: str):
    out = subprocess.run([str(binary), "--project", str(data), *args, "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"pipeline {' '.join(args)} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def fingerprint(binary: Path, data: Path) -> dict:
    """Row count and the sum of every numeric column of each table, via the engine."""
    result = {}
    for t in TABLES:
        cols = [c["name"] for c in cli(binary, data, "describe", t)["columns"]
                if c["type"].startswith(("int", "long", "decimal"))]
        select = ", ".join(["count(*)"] + [f'sum("{c}")' for c in cols])
        result[t] = cli(binary, data, "query", f"SELECT {select} FROM {t}")["rows"][0]
    return result


def files(binary: Path, data: Path, table: str) -> dict:
    out = {}
    for f in cli(binary, data, "files", table):
        digest = hashlib.sha256(Path(f["path"]).read_bytes()).hexdigest()
        out[f["path"]] = (f["partition"], digest)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=5_000_000)
    ap.add_argument("--month", default="2025-06")
    ap.add_argument("--binary", type=Path, default=REPO / "target/release/pipeline")
    ap.add_argument("--work", type=Path, default=Path("/tmp/pipeline-bench"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()

    data = args.work / str(args.n)
    ensure_data(args.n, data, args.seed)
    for folder in ("pipelines", "sql"):
        shutil.rmtree(data / folder, ignore_errors=True)
        shutil.copytree(REPO / folder, data / folder)
    warm_cache(data)
    year, month = map(int, args.month.split("-"))
    first = f"{args.month}-01"
    last = f"{args.month}-{calendar.monthrange(year, month)[1]:02d}"
    partition = f"order_date_month={args.month}"
    binary = args.binary.resolve()

    fulls, backfills, checks, plan = [], [], {}, None
    for i in range(args.repeat):
        shutil.rmtree(data / "warehouse", ignore_errors=True)
        full = measure([str(binary), "--project", str(data), "run", "retail", "--json"],
                       data / "full.stdout.json", data / "full.stderr.log")
        if full["exit_code"] != 0:
            raise SystemExit(f"full run failed:\n{tail(data / 'full.stderr.log')}")
        if i == 0:
            before = fingerprint(binary, data)
            before_files = {t: files(binary, data, t) for t in ("silver.orders", "gold.fact_orders")}
            plan = cli(binary, data, "backfill", "retail", "--from", first, "--to", last, "--plan")
        bf = measure([str(binary), "--project", str(data), "backfill", "retail",
                      "--from", first, "--to", last, "--json"],
                     data / "backfill.stdout.json", data / "backfill.stderr.log")
        if bf["exit_code"] != 0:
            raise SystemExit(f"backfill failed:\n{tail(data / 'backfill.stderr.log')}")
        bf["jobs"] = {j["table"]: [j["seconds"], j["action"]]
                      for j in json.loads((data / "backfill.stdout.json").read_text())["jobs"]}
        if i == 0:
            after = fingerprint(binary, data)
            checks["same_values"] = after == before
            for t, old in before_files.items():
                new = files(binary, data, t)
                old_rest = {k: v for k, v in old.items() if v[0] != partition}
                new_rest = {k: v for k, v in new.items() if v[0] != partition}
                old_month = {k for k, v in old.items() if v[0] == partition}
                new_month = {k for k, v in new.items() if v[0] == partition}
                checks[t] = {
                    "other_files_untouched": old_rest == new_rest,
                    "other_files": len(old_rest),
                    "month_files_all_new": bool(new_month) and not (new_month & old_month),
                }
        log(f"repeat {i + 1}: full {full['wall_s']:.2f}s, backfill {bf['wall_s']:.2f}s")
        fulls.append(full)
        backfills.append(bf)

    med = lambda runs, k: round(statistics.median(r[k] for r in runs), 3)  # noqa: E731
    summary = {
        "n": args.n, "month": args.month, "repeat": args.repeat,
        "full": {k: med(fulls, k) for k in ("wall_s", "cpu_s", "peak_rss_mib")},
        "backfill": {k: med(backfills, k) for k in ("wall_s", "cpu_s", "peak_rss_mib")},
        "backfill_jobs_first_repeat": backfills[0]["jobs"],
        "checks": checks,
        "plan": plan,
    }
    summary["ratio_wall"] = round(summary["backfill"]["wall_s"] / summary["full"]["wall_s"], 3)
    log(json.dumps(summary, indent=2))
    (args.work / "backfill-results.json").write_text(json.dumps(summary, indent=2))
    ok = checks["same_values"] and all(
        c["other_files_untouched"] and c["month_files_all_new"]
        for k, c in checks.items() if k != "same_values")
    log(f"\nbackfill {args.month} / full run: {summary['ratio_wall']:.3f} (goal <= 0.125); "
        f"checks {'passed' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
