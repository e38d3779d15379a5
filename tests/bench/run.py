#!/usr/bin/env python3
"""Benchmark: `pipeline run retail` against the DuckDB peer on the same generated data.

    python3 tests/bench/run.py --sizes 1000000 5000000 20000000 \
        --binary target/release/pipeline --work /tmp/pipeline-bench [--repeat 1] [--seed 42] \
        [--baseline OLD_BINARY] [--web-share 0.5] [--malformed 0.01]

For each N:
  1. generate N orders into WORK/N with generate.py (skipped when WORK/N/.done records
     the same N, seed and generator version);
  2. read every input file once (untimed), so both tools start from a warm page cache;
  3. --repeat times, alternating:
       (a) the engine: delete WORK/N/warehouse, run `BINARY --project WORK/N run retail --json`;
       (b) the peer: `python3 duckdb_retail.py WORK/N WORK/N/duckdb_out` into a fresh folder;
       (c) with --baseline, an earlier build of the engine, exactly as (a), so a change is
           measured against the code before it in the same session (ratio engine/baseline).
     Each is one child process, reaped with os.wait4 so we get that child's own rusage:
     wall seconds, CPU seconds (user + sys) and peak RSS (ru_maxrss, KiB -> MiB).
  4. compare gold.monthly_revenue of both (totals; small differences are expected where
     DuckDB's parsing is more lenient, see README.md).

Prints a Markdown table (medians over the repeats), engine/DuckDB ratios, and the engine's
per-job seconds next to DuckDB's per-stage seconds; writes everything to WORK/results.json.
Each child's stdout/stderr is kept in WORK/N/{engine,duckdb}.{stdout.json,stderr.log}.
"""

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import generate  # noqa: E402  (for VERSION, so cached data is regenerated when it changes)

GOLD = ["gold.fact_orders", "gold.customer_metrics", "gold.monthly_revenue", "gold.repeat_buyers"]


def log(msg: str = "") -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------
# Measuring one child process
# ---------------------------------------------------------------------------------------


def measure(argv: list, stdout_path: Path, stderr_path: Path) -> dict:
    """Runs argv as a child and returns its wall time and its own rusage.

    os.wait4 reaps exactly this child and reports the resources it (and any descendants
    it waited for) used: the figures do not include this script or other children."""
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)  # we reaped it, not Popen
    return {
        "exit_code": child.returncode,
        "wall_s": round(wall, 3),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "user_s": round(usage.ru_utime, 3),
        "sys_s": round(usage.ru_stime, 3),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),  # Linux: ru_maxrss is in KiB
    }


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def load_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------------------


def ensure_data(n: int, data: Path, seed: int, web_share: float = 0.2,
                malformed: float = 0.001) -> dict:
    done = load_json(data / ".done")
    if done and done.get("n") == n and done.get("seed") == seed \
            and done.get("version") == generate.VERSION \
            and done.get("web_share", 0.2) == web_share \
            and done.get("malformed", 0.001) == malformed:
        log(f"data: {data} already generated ({done['orders']} orders, {done['files']} files, "
            f"{done['bytes'] / 2**20:.0f} MiB)")
        return done
    log(f"data: generating {n} orders into {data} ...")
    subprocess.run([sys.executable, str(HERE / "generate.py"), str(n), str(data),
                    "--seed", str(seed), "--web-share", str(web_share),
                    "--malformed", str(malformed)], check=True)
    return load_json(data / ".done")


def refresh_spec(data: Path) -> None:
    """Copies the repository's current spec and SQL over the generated ones, so cached data
    runs with the pipeline as it is now (both tools read the same spec and SQL)."""
    repo = HERE.parent.parent
    for folder in ("pipelines", "sql"):
        shutil.rmtree(data / folder, ignore_errors=True)
        shutil.copytree(repo / folder, data / folder)


def warm_cache(data: Path) -> None:
    """Reads every input file once so the first timed run does not pay for cold reads."""
    for path in sorted((data / "sample-data").rglob("*")):
        if path.is_file():
            with open(path, "rb") as f:
                while f.read(1 << 22):
                    pass


def run_engine(binary: Path, data: Path, name: str = "engine") -> dict:
    shutil.rmtree(data / "warehouse", ignore_errors=True)
    out, err = data / f"{name}.stdout.json", data / f"{name}.stderr.log"
    m = measure([str(binary), "--project", str(data), "run", "retail", "--json"], out, err)
    report = load_json(out)
    if m["exit_code"] != 0 or report is None:
        log(f"  {name} FAILED (exit {m['exit_code']}); {err}:\n{tail(err)}")
        m["failed"] = True
        return m
    m["report_seconds"] = report.get("seconds")
    m["jobs"] = [
        {k: j.get(k) for k in ("job", "table", "rows_in", "rows_out", "quarantined",
                               "files", "bytes", "seconds")}
        for j in report.get("jobs", [])
    ]
    m["rows"] = {j["table"]: j["rows_out"] for j in m["jobs"]}
    return m


def run_duckdb(data: Path) -> dict:
    target = data / "duckdb_out"
    shutil.rmtree(target, ignore_errors=True)
    out, err = data / "duckdb.stdout.json", data / "duckdb.stderr.log"
    m = measure([sys.executable, str(HERE / "duckdb_retail.py"), str(data), str(target)], out, err)
    report = load_json(out)
    if m["exit_code"] != 0 or report is None:
        log(f"  duckdb FAILED (exit {m['exit_code']}); {err}:\n{tail(err)}")
        m["failed"] = True
        return m
    m["report_seconds"] = report.get("seconds")
    m["stage_seconds"] = report.get("stage_seconds", {})
    m["rows"] = report.get("counts", {})
    return m


def compare_monthly_revenue(data: Path) -> dict:
    """Totals of gold.monthly_revenue from both outputs (untimed, after the runs).

    The engine's table is read from its Parquet data files: the warehouse was created from
    scratch by one run, so its data folder holds exactly the current snapshot's files."""
    import duckdb

    def totals(folder: Path):
        files = sorted(str(f) for f in folder.rglob("*.parquet"))
        if not files:
            return None
        row = duckdb.connect().execute(
            "SELECT count(*), sum(orders), sum(revenue)::VARCHAR "
            "FROM read_parquet(?, hive_partitioning = false)", [files]
        ).fetchone()
        return {"months": row[0], "orders": row[1], "revenue": row[2]}

    engine = totals(data / "warehouse" / "gold" / "monthly_revenue" / "data")
    peer = totals(data / "duckdb_out" / "gold" / "monthly_revenue")
    return {"engine": engine, "duckdb": peer}


def summarize(runs: list) -> dict:
    """Medians over the successful repeats."""
    ok = [r for r in runs if not r.get("failed")]
    if not ok:
        return {"failed": True}
    return {k: round(statistics.median(r[k] for r in ok), 3)
            for k in ("wall_s", "cpu_s", "user_s", "sys_s", "peak_rss_mib")}


# ---------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------


def fmt_int(v) -> str:
    return "-" if v is None else f"{v:,}"


def markdown_table(results: dict) -> str:
    head = ["N", "tool", "wall s", "CPU s", "peak RSS MiB"] + [g.split(".")[1] for g in GOLD]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if i != 1 else "---"
                                                        for i in range(len(head))) + "|"]
    for n, r in results.items():
        for tool in ("engine", "baseline", "duckdb"):
            t = r.get(tool)
            if not t:
                continue
            s = t["median"]
            if s.get("failed"):
                lines.append(f"| {int(n):,} | {tool} | failed | | | " + " | " * (len(GOLD) - 1) + " |")
                continue
            rows = t.get("rows", {})
            cells = [f"{int(n):,}", tool, f"{s['wall_s']:.2f}", f"{s['cpu_s']:.2f}",
                     f"{s['peak_rss_mib']:.0f}"] + [fmt_int(rows.get(g)) for g in GOLD]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


def jobs_table(engine: dict, duckdb_run: dict) -> str:
    """Engine per-job seconds (from its --json report) next to DuckDB's per-stage seconds."""
    jobs = engine.get("jobs", [])
    total = sum(j["seconds"] or 0 for j in jobs) or 1.0
    stages = duckdb_run.get("stage_seconds", {}) if duckdb_run else {}
    # The engine runs independent jobs concurrently, so job seconds add up to more than the
    # run's wall time; "share" is the job's part of the summed job seconds.
    lines = ["| job | table | rows in | rows out | quarantined | engine s | share | duckdb s |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for j in jobs:
        d = stages.get(j["table"])
        lines.append(
            f"| {j['job']} | {j['table']} | {fmt_int(j['rows_in'])} | {fmt_int(j['rows_out'])} "
            f"| {fmt_int(j['quarantined'])} | {j['seconds']:.2f} | {100 * (j['seconds'] or 0) / total:.0f}% "
            f"| {'-' if d is None else f'{d:.2f}'} |")
    return "\n".join(lines)


def engine_version(binary: Path) -> str:
    try:
        return subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def host_info() -> dict:
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "cpus": os.cpu_count()}
    try:
        import duckdb
        info["duckdb"] = duckdb.__version__
    except ImportError:
        info["duckdb"] = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["mem_total_mib"] = int(line.split()[1]) // 1024
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", required=True, help="numbers of orders")
    ap.add_argument("--binary", type=Path, required=True, help="the pipeline executable")
    ap.add_argument("--work", type=Path, required=True, help="folder for data and results")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--web-share", type=float, default=0.2,
                    help="share of orders in web JSON Lines (0.5: the JSON-heavy variant)")
    ap.add_argument("--malformed", type=float, default=0.001,
                    help="share of orders written as malformed lines (0.01: the dirty variant)")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="an earlier build of the engine, run alternately with --binary")
    args = ap.parse_args()

    binary = args.binary.resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        sys.exit(f"{binary} is not an executable file (cargo build --release first?)")
    baseline = args.baseline.resolve() if args.baseline else None
    if baseline and not (baseline.is_file() and os.access(baseline, os.X_OK)):
        sys.exit(f"{baseline} is not an executable file")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)

    doc = {
        "started_at": dt.datetime.now().isoformat(timespec="seconds"),
        "binary": str(binary),
        "engine_version": engine_version(binary),
        "baseline": str(baseline) if baseline else None,
        "host": host_info(),
        "seed": args.seed,
        "web_share": args.web_share,
        "malformed": args.malformed,
        "repeat": args.repeat,
        "sizes": {},
    }
    log(f"engine: {binary} ({doc['engine_version']}); peer: DuckDB {doc['host']['duckdb']}; "
        f"{doc['host']['cpus']} CPUs")

    for n in args.sizes:
        name = str(n) if args.web_share == 0.2 else f"{n}-web{round(args.web_share * 100)}"
        if args.malformed != 0.001:
            name += f"-bad{args.malformed * 100:g}"
        data = work / name
        log(f"\n== N = {n:,}")
        entry = {"data": ensure_data(n, data, args.seed, args.web_share, args.malformed)}
        refresh_spec(data)
        warm_cache(data)
        engine_runs, duckdb_runs, baseline_runs = [], [], []
        for i in range(args.repeat):
            log(f"  run {i + 1}/{args.repeat}: engine ...")
            e = run_engine(binary, data)
            engine_runs.append(e)
            log(f"    wall {e['wall_s']:.2f}s  cpu {e['cpu_s']:.2f}s  rss {e['peak_rss_mib']:.0f} MiB")
            log(f"  run {i + 1}/{args.repeat}: duckdb ...")
            d = run_duckdb(data)
            duckdb_runs.append(d)
            log(f"    wall {d['wall_s']:.2f}s  cpu {d['cpu_s']:.2f}s  rss {d['peak_rss_mib']:.0f} MiB")
            if baseline:
                log(f"  run {i + 1}/{args.repeat}: baseline ...")
                b = run_engine(baseline, data, "baseline")
                baseline_runs.append(b)
                log(f"    wall {b['wall_s']:.2f}s  cpu {b['cpu_s']:.2f}s  rss {b['peak_rss_mib']:.0f} MiB")
        last_e = next((r for r in reversed(engine_runs) if not r.get("failed")), {})
        last_d = next((r for r in reversed(duckdb_runs) if not r.get("failed")), {})
        entry["engine"] = {"median": summarize(engine_runs), "runs": engine_runs,
                           "rows": last_e.get("rows", {}), "jobs": last_e.get("jobs", [])}
        entry["duckdb"] = {"median": summarize(duckdb_runs), "runs": duckdb_runs,
                           "rows": last_d.get("rows", {}),
                           "stage_seconds": last_d.get("stage_seconds", {})}
        me, md = entry["engine"]["median"], entry["duckdb"]["median"]
        entry["ratios_engine_over_duckdb"] = {
            k: ratio(me.get(k), md.get(k)) for k in ("wall_s", "cpu_s", "peak_rss_mib")}
        if baseline:
            last_b = next((r for r in reversed(baseline_runs) if not r.get("failed")), {})
            entry["baseline"] = {"median": summarize(baseline_runs), "runs": baseline_runs,
                                 "rows": last_b.get("rows", {}), "jobs": last_b.get("jobs", [])}
            mb = entry["baseline"]["median"]
            entry["ratios_engine_over_baseline"] = {
                k: ratio(me.get(k), mb.get(k)) for k in ("wall_s", "cpu_s", "peak_rss_mib")}
        try:
            entry["monthly_revenue_totals"] = compare_monthly_revenue(data)
        except Exception as e:  # a check, not the benchmark: never lose the numbers over it
            entry["monthly_revenue_totals"] = {"error": str(e)}
        doc["sizes"][str(n)] = entry
        (work / "results.json").write_text(json.dumps(doc, indent=1) + "\n")  # after every N

    # ---- report ----
    log("\n## Results (median of %d run%s)\n" % (args.repeat, "" if args.repeat == 1 else "s"))
    log(markdown_table(doc["sizes"]))
    log("\n## Engine / DuckDB\n")
    log("| N | wall | CPU | peak RSS |\n|---:|---:|---:|---:|")
    for n, e in doc["sizes"].items():
        r = e["ratios_engine_over_duckdb"]
        cells = ["-" if r[k] is None else f"{r[k]:.2f}x" for k in ("wall_s", "cpu_s", "peak_rss_mib")]
        log(f"| {int(n):,} | " + " | ".join(cells) + " |")
    if baseline:
        log("\n## Engine / baseline (the same tables from an earlier build)\n")
        log("| N | wall | CPU | peak RSS | same row counts |\n|---:|---:|---:|---:|---|")
        for n, e in doc["sizes"].items():
            r = e["ratios_engine_over_baseline"]
            cells = ["-" if r[k] is None else f"{r[k]:.2f}x" for k in ("wall_s", "cpu_s", "peak_rss_mib")]
            same = e["engine"]["rows"] == e["baseline"]["rows"]
            log(f"| {int(n):,} | " + " | ".join(cells) + f" | {'yes' if same else 'NO'} |")
    for n, e in doc["sizes"].items():
        log(f"\n## Engine jobs, N = {int(n):,} (seconds from its --json report)\n")
        log(jobs_table(e["engine"], e["duckdb"]))
        runs = [r for r in e["engine"]["runs"] if not r.get("failed")]
        if runs:
            log(f"\nengine run seconds (its report): {runs[-1].get('report_seconds')}; "
                f"sum of job seconds: {sum(j['seconds'] or 0 for j in e['engine']['jobs']):.2f}; "
                f"process wall: {runs[-1]['wall_s']:.2f}")
        t = e.get("monthly_revenue_totals", {})
        if t.get("engine") and t.get("duckdb"):
            log(f"\ngold.monthly_revenue totals: engine {t['engine']['orders']:,} orders / "
                f"{t['engine']['revenue']}, duckdb {t['duckdb']['orders']:,} orders / "
                f"{t['duckdb']['revenue']}")
    log(f"\nwrote {work / 'results.json'}")


if __name__ == "__main__":
    main()
