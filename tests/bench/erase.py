#!/usr/bin/env python3
"""Benchmark: `pipeline erase` of one customer against a full run, on generated retail data.

    python3 tests/bench/erase.py --n 5000000 --customer 4711 \
        --binary target/release/pipeline --work /tmp/pipeline-bench [--repeat 3] [--seed 42]

For each repeat: delete WORK/N/warehouse, time a full `run retail`, then time `erase retail
--where "customer_id = C" --plan` and the erase itself on that warehouse (one child process
each, wall/CPU/peak RSS from os.wait4). After the first erase it checks, with the engine's
own queries, that

  * no table holding `customer_id` has a row of the customer any more,
  * every other customer's rows of silver.orders are unchanged (count and column sums),
  * gold.monthly_revenue (recomputed in the same publish) lost exactly the customer's
    non-cancelled orders and revenue per month, as computed before the erase.

The peer is the engine's own full run on the same data (what recomputing everything costs);
DuckDB's full pipeline time on the same data comes from `run.py`. Prints medians, the ratio
erase / full run, and per table the rows removed and the files and bytes rewritten against
the table's files. It also times the next `run retail` (no new file): it recomputes the
erased transforms' tables from their erased inputs, once. Results go to
WORK/erase-results.json.
"""

import argparse
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


TABLES = ["bronze.pos_orders", "bronze.web_orders", "bronze.customers", "silver.orders",
          "silver.customers", "gold.fact_orders", "gold.customer_metrics"]


def cli(binary: Path, data: Path, *args: str):
    out = subprocess.run([str(binary), "--project", str(data), *args, "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"pipeline {' '.join(args)} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def rows(binary: Path, data: Path, sql: str) -> list:
    return cli(binary, data, "query", sql)["rows"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=5_000_000)
    ap.add_argument("--customer", type=int, default=4711)
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
    condition = f"customer_id = {args.customer}"
    base = [str(binary), "--project", str(data)]
    monthly = ("SELECT CAST(month AS VARCHAR), orders, customers, revenue "
               "FROM gold.monthly_revenue ORDER BY 1")
    theirs_sql = (f"SELECT CAST(CAST(date_trunc('month', order_date) AS DATE) AS VARCHAR), "
                  f"count(*), sum(amount) FROM gold.fact_orders "
                  f"WHERE {condition} AND status <> 'cancelled' GROUP BY 1")
    others_sql = (f"SELECT count(*), sum(quantity), sum(amount) FROM silver.orders "
                  f"WHERE customer_id <> {args.customer}")

    fulls, plans, erases, nexts, checks, receipt = [], [], [], [], {}, None
    for i in range(args.repeat):
        shutil.rmtree(data / "warehouse", ignore_errors=True)
        full = measure([*base, "run", "retail", "--json"],
                       data / "full.stdout.json", data / "full.stderr.log")
        if full["exit_code"] != 0:
            raise SystemExit(f"full run failed:\n{tail(data / 'full.stderr.log')}")
        if i == 0:
            table_bytes = {t: sum(f["bytes"] for f in cli(binary, data, "files", t))
                           for t in TABLES}
            before = {r[0]: r[1:] for r in rows(binary, data, monthly)}
            theirs = {r[0]: r[1:] for r in rows(binary, data, theirs_sql)}
            others = rows(binary, data, others_sql)
        plan = measure([*base, "erase", "retail", "--where", condition, "--plan", "--json"],
                       data / "plan.stdout.json", data / "plan.stderr.log")
        erase = measure([*base, "erase", "retail", "--where", condition,
                         "--reason", "benchmark", "--json"],
                        data / "erase.stdout.json", data / "erase.stderr.log")
        if plan["exit_code"] != 0 or erase["exit_code"] != 0:
            raise SystemExit(f"erase failed:\n{tail(data / 'erase.stderr.log')}")
        # The next nightly run, with no new file: it recomputes the erased transforms' tables
        # from their erased inputs (the months the erase touched).
        after_run = measure([*base, "run", "retail", "--json"],
                            data / "next.stdout.json", data / "next.stderr.log")
        if after_run["exit_code"] != 0:
            raise SystemExit(f"the run after the erase failed:\n{tail(data / 'next.stderr.log')}")
        if i == 0:
            next_jobs = {j["table"]: j["action"] for j in
                         json.loads((data / "next.stdout.json").read_text())["jobs"]}
            receipt = json.loads((data / "erase.stdout.json").read_text())["erase"]
            left = {t["table"]: rows(binary, data, f"SELECT count(*) FROM {t['table']} "
                                     f"WHERE {t['condition']}")[0][0]
                    for t in receipt["tables"] if "__quarantine" not in t["table"]}
            checks["no_row_left"] = all(str(n) == "0" for n in left.values())
            checks["others_unchanged"] = rows(binary, data, others_sql) == others
            after = {r[0]: r[1:] for r in rows(binary, data, monthly)}
            ok = True
            for month, (orders, customers, revenue) in before.items():
                lost_orders, lost_revenue = theirs.get(month, (0, "0"))
                want = (int(orders) - int(lost_orders),
                        round(float(revenue) - float(lost_revenue), 2))
                got = (int(after[month][0]), round(float(after[month][2]), 2))
                ok &= got == want
            checks["monthly_revenue_lost_exactly_theirs"] = ok
            checks["next_run_keeps_them_erased"] = \
                rows(binary, data, f"SELECT count(*) FROM silver.orders WHERE {condition}")[0][0] \
                in (0, "0")
        log(f"repeat {i + 1}: full {full['wall_s']:.2f}s, plan {plan['wall_s']:.2f}s, "
            f"erase {erase['wall_s']:.2f}s, next run {after_run['wall_s']:.2f}s")
        fulls.append(full)
        plans.append(plan)
        erases.append(erase)
        nexts.append(after_run)

    med = lambda runs, k: round(statistics.median(r[k] for r in runs), 3)  # noqa: E731
    keys = ("wall_s", "cpu_s", "peak_rss_mib")
    summary = {
        "n": args.n, "customer": args.customer, "repeat": args.repeat,
        "full": {k: med(fulls, k) for k in keys},
        "plan": {k: med(plans, k) for k in keys},
        "erase": {k: med(erases, k) for k in keys},
        "next_run": {k: med(nexts, k) for k in keys},
        "next_run_jobs_first_repeat": next_jobs,
        "tables": [{**t, "bytes_in_table": table_bytes.get(t["table"])} for t in receipt["tables"]],
        "recomputed": receipt["recomputed"],
        "checks": checks,
    }
    summary["ratio_wall"] = round(summary["erase"]["wall_s"] / summary["full"]["wall_s"], 3)
    rewritten = sum(t["bytes_rewritten"] for t in receipt["tables"])
    summary["bytes_rewritten"] = rewritten
    summary["bytes_in_tables"] = sum(table_bytes.values())
    log(json.dumps(summary, indent=2))
    (args.work / "erase-results.json").write_text(json.dumps(summary, indent=2))
    ok = all(checks.values())
    log(f"\nerase / full run: {summary['ratio_wall']:.3f}; {rewritten / 2**20:.0f} of "
        f"{summary['bytes_in_tables'] / 2**20:.0f} MiB rewritten; "
        f"checks {'passed' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
