#!/usr/bin/env python3
"""Benchmark: `pipeline env diff` of gold.fact_orders after a change to one month, against
DuckDB comparing the two versions of the whole table.

    python3 tests/bench/env_diff.py --n 5000000 --month 2025-06 \\
        --binary target/release/pipeline --work /tmp/pipeline-bench [--repeat 3] [--seed 42]

On generated retail data (WORK/N, as run.py makes it; the spec and SQL are copied from the
repository first): a full `run retail` on main, then in environment `dev` an UPDATE of every
100th order of the month in silver.orders (`pipeline sql --env dev`) and `run retail --env
dev`, which replaces that month of gold.fact_orders on its branch. Then, each repeat, one
child process each:

  * `pipeline env diff retail dev --tables gold.fact_orders --key gold.fact_orders:order_id`
  * the peer: DuckDB (one thread per core, as it chooses) counting the rows of the whole of
    main's version EXCEPT ALL the whole of dev's, and the reverse, over the two snapshots'
    Parquet files (what comparing the table without knowing which files changed costs).

Checks that the diff finds exactly the updated orders as changed (quantity only), in the month
only, and that DuckDB's counts equal the diff's changed rows. Prints medians (wall, CPU, peak
RSS), files read and skipped, and the ratio diff / DuckDB. Results: WORK/env-diff-results.json.
"""

import argparse
import calendar
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

TABLE = "gold.fact_orders"

PEER = """
import json, sys, duckdb
main, dev = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
con = duckdb.connect()
m, d = con.read_parquet(main), con.read_parquet(dev)
only_dev = con.sql("SELECT count(*) FROM (SELECT * FROM d EXCEPT ALL SELECT * FROM m)").fetchone()[0]
only_main = con.sql("SELECT count(*) FROM (SELECT * FROM m EXCEPT ALL SELECT * FROM d)").fetchone()[0]
print(json.dumps({"only_dev": only_dev, "only_main": only_main}))
"""


def cli(binary: Path, data: Path, *args: str, ok=(0,)):
    out = subprocess.run([str(binary), "--project", str(data), *args, "--json"],
                         capture_output=True, text=True)
    if out.returncode not in ok:
        raise SystemExit(f"pipeline {' '.join(args)} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def file_list(binary: Path, data: Path, snapshot: int) -> list:
    return [f["path"] for f in cli(binary, data, "files", TABLE, "--as-of", str(snapshot))]


def prepare(binary: Path, data: Path, month: str) -> dict:
    """Main, then the change in dev; returns what the change was."""
    shutil.rmtree(data / "warehouse", ignore_errors=True)
    cli(binary, data, "run", "retail")
    year, mon = map(int, month.split("-"))
    last = calendar.monthrange(year, mon)[1]
    where = (f"order_date >= DATE '{month}-01' AND order_date <= DATE '{month}-{last:02d}' "
             "AND order_id % 100 = 0")
    changed = cli(binary, data, "sql",
                  f"UPDATE silver.orders SET quantity = quantity + 1 WHERE {where}",
                  "--env", "dev", "--reason", "bench")
    run = cli(binary, data, "run", "retail", "--env", "dev")
    action = next(j["action"] for j in run["jobs"] if j["table"] == TABLE)
    heads = next(e for e in cli(binary, data, "env", "list", "retail") if e["env"] == "dev")
    main_snapshot = cli(binary, data, "describe", TABLE)["current_snapshot_id"]
    return {"updated_rows": changed["rows"], "fact_orders_action": action,
            "main": main_snapshot, "dev": heads["tables"][TABLE]}


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
    binary = args.binary.resolve()
    change = prepare(binary, data, args.month)
    log(f"change: {json.dumps(change)}")
    lists = {}
    for side in ("main", "dev"):
        lists[side] = data / f"env-diff-{side}-files.json"
        lists[side].write_text(json.dumps(file_list(binary, data, change[side])))
    peer_script = data / "env_diff_peer.py"
    peer_script.write_text(PEER)

    diff_argv = [str(binary), "--project", str(data), "env", "diff", "retail", "dev",
                 "--tables", TABLE, "--key", f"{TABLE}:order_id", "--json"]
    peer_argv = [sys.executable, str(peer_script), str(lists["main"]), str(lists["dev"])]
    diffs, peers = [], []
    for i in range(args.repeat):
        d = measure(diff_argv, data / "env-diff.stdout.json", data / "env-diff.stderr.log")
        if d["exit_code"] != 1:  # 1: the sides differ
            raise SystemExit(f"env diff failed:\n{tail(data / 'env-diff.stderr.log')}")
        p = measure(peer_argv, data / "env-diff-peer.stdout.json", data / "env-diff-peer.stderr.log")
        if p["exit_code"] != 0:
            raise SystemExit(f"DuckDB peer failed:\n{tail(data / 'env-diff-peer.stderr.log')}")
        log(f"repeat {i + 1}: env diff {d['wall_s']:.2f}s, DuckDB whole table {p['wall_s']:.2f}s")
        diffs.append(d)
        peers.append(p)

    result = json.loads((data / "env-diff.stdout.json").read_text())[0]
    peer = json.loads((data / "env-diff-peer.stdout.json").read_text())
    partition = f"order_date_month={args.month}"
    checks = {
        "changed_is_the_update": result["changed"] == change["updated_rows"] > 0,
        "nothing_added_or_removed": result["added"] == 0 and result["removed"] == 0,
        "only_quantity": list(result["changed_columns"]) == ["quantity"],
        "only_the_month": [p["partition"] for p in result["partitions"]] == [partition],
        "duckdb_agrees": peer["only_dev"] == peer["only_main"] == result["changed"],
    }
    med = lambda runs, k: round(statistics.median(r[k] for r in runs), 3)  # noqa: E731
    summary = {
        "n": args.n, "month": args.month, "repeat": args.repeat, "change": change,
        "env_diff": {k: med(diffs, k) for k in ("wall_s", "cpu_s", "peak_rss_mib")},
        "duckdb_whole_table": {k: med(peers, k) for k in ("wall_s", "cpu_s", "peak_rss_mib")},
        "files_read": result["files_read"], "files_skipped": result["files_skipped"],
        "files_per_side": {s: len(json.loads(lists[s].read_text())) for s in lists},
        "changed": result["changed"], "checks": checks,
    }
    summary["ratio_wall"] = round(summary["env_diff"]["wall_s"]
                                  / summary["duckdb_whole_table"]["wall_s"], 3)
    log(json.dumps(summary, indent=2))
    (args.work / "env-diff-results.json").write_text(json.dumps(summary, indent=2))
    if not all(checks.values()):
        raise SystemExit(f"checks failed: {checks}")


if __name__ == "__main__":
    main()
