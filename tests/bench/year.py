#!/usr/bin/env python3
"""Benchmark: a year of nightly scheduled runs, with and without `after_run` maintenance.

    python3 tests/bench/year.py --binary target/release/pipeline --work /tmp/pipeline-year \
        [--orders 1000000] [--seed 42] [--days 365] [--modes default off] [--flat]

1. Generates --orders orders over 2025 with generate.py (cached in WORK/data): one POS CSV
   file per day, one web JSON Lines file per month, one customer file.
2. For each mode, a fresh project (WORK/<mode>) with the repository's retail spec and SQL plus
   `[schedule] cron = "0 2 * * *"` (UTC). Mode `default` adds nothing (runs maintain their
   tables by default on the embedded catalog, with the default retention window); `off` adds
   `[maintenance] after_run = false` (the rot, for comparison); `maintained` adds
   `[maintenance] after_run = true` (the same as `default` on this catalog, said explicitly).
   Then, for each day D of the year: the day's POS file and web orders (the monthly web files
   split by order date; on day 1 the customer file too) land in the project, and
   `pipeline schedule tick --now T` serves tick T, the 02:00 tick of day D + 1 of a calendar
   that starts a week from now (so every tick is in the future), with PIPELINE_CLOCK_SKEW
   moving the child's clock to T: snapshots, run records and maintenance age as over a real
   year. One child process per tick, timed with its own rusage (wall, CPU, peak RSS).
3. After the last day: per table the live data files, the most files in one partition, the
   current metadata file's bytes and the bytes of the whole metadata folder.
4. The same data loaded in one run into WORK/oneshot; a month's gold query (June) timed 5
   times on each project (median; each a `pipeline query` child process).

Prints a Markdown summary and writes WORK/year-results.json.
"""

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import generate  # noqa: E402

QUERY = (
    "SELECT country, count(*) AS orders, sum(amount) AS revenue FROM gold.fact_orders "
    "WHERE order_date BETWEEN DATE '2025-06-01' AND DATE '2025-06-30' AND status <> 'cancelled' "
    "GROUP BY country ORDER BY country"
)
REPORT_DAYS = [1, 30, 180, 365]


def log(msg=""):
    print(msg, flush=True)


def measure(argv, stdout_path, stderr_path, env=None):
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    return {
        "exit_code": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 3),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
    }


def ensure_data(n, data, seed, flat):
    done = data / ".done"
    if done.exists():
        meta = json.loads(done.read_text())
        if (meta.get("n"), meta.get("seed"), meta.get("version"), meta.get("flat", False)) == \
                (n, seed, generate.VERSION, flat):
            return
    shutil.rmtree(data / "web-daily", ignore_errors=True)
    subprocess.run([sys.executable, str(HERE / "generate.py"), str(n), str(data), "--seed",
                    str(seed)] + (["--flat"] if flat else []), check=True)


MODES = {
    "default": "",
    "off": "\n[maintenance]\nafter_run = false\n",
    "maintained": "\n[maintenance]\nafter_run = true\n",
}

# The schedule's calendar: tick i (from 0) serves day i of the data (2025) at
# TICKS_FROM + i days, 02:00 UTC. A week ahead of now: a clock moved back would date
# snapshots before the metadata that the catalog stamps with the real time.
TICKS_FROM = dt.datetime.combine(dt.date.today() + dt.timedelta(days=7), dt.time(2, 5),
                                 tzinfo=dt.timezone.utc)


def new_project(path, data, mode):
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    shutil.copytree(REPO / "sql", path / "sql")
    (path / "pipelines").mkdir()
    spec = (REPO / "pipelines" / "retail.toml").read_text()
    spec += '\n[schedule]\ncron = "0 2 * * *"\n'
    spec += MODES[mode]
    (path / "pipelines" / "retail.toml").write_text(spec)
    for sub in ("orders", "web", "customers"):
        (path / "sample-data" / "retail" / sub).mkdir(parents=True)


def split_web(data):
    """The monthly web files split into one file per day (by the order's own date; a line
    whose date cannot be read goes with the month's first day), cached in DATA/web-daily."""
    out = data / "web-daily"
    if (out / ".done").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for month_file in sorted((data / "sample-data" / "retail" / "web").glob("web_*.jsonl")):
        first = month_file.stem[len("web_"):] + "-01"
        days = {}
        for line in month_file.read_text().splitlines(keepends=True):
            try:
                day = str(json.loads(line)["order_ts"])[:10]
                dt.date.fromisoformat(day)
                if day[:7] != first[:7]:
                    day = first
            except (ValueError, KeyError, TypeError):
                day = first
            days.setdefault(day, []).append(line)
        for day, lines in days.items():
            (out / f"web_{day}.jsonl").write_text("".join(lines))
    (out / ".done").write_text("1")
    return out


def land(project, data, day):
    """The files that exist by the tick after `day` (a date of 2025): that day's POS file and
    web orders, and on day 1 the customer file."""
    src = data / "sample-data" / "retail"
    dst = project / "sample-data" / "retail"
    if day == dt.date(2025, 1, 1):
        shutil.copy(src / "customers" / "customers.csv", dst / "customers" / "customers.csv")
    shutil.copy(src / "orders" / f"pos_{day.isoformat()}.csv", dst / "orders")
    web = split_web(data) / f"web_{day.isoformat()}.jsonl"
    if web.exists():
        shutil.copy(web, dst / "web")


def table_stats(binary, project):
    out = subprocess.run([str(binary), "--project", str(project), "tables", "--json"],
                         capture_output=True, check=True)
    stats = {}
    for t in json.loads(out.stdout):
        name = t["table"]
        files = subprocess.run([str(binary), "--project", str(project), "files", name, "--json"],
                               capture_output=True, check=True)
        per_partition = {}
        for f in json.loads(files.stdout):
            per_partition[f["partition"]] = per_partition.get(f["partition"], 0) + 1
        ns, tbl = name.split(".", 1)
        meta_dir = project / "warehouse" / ns / tbl / "metadata"
        metadata_files = sorted(meta_dir.glob("*.metadata.json"), key=lambda p: p.stat().st_mtime)
        stats[name] = {
            "data_files": sum(per_partition.values()),
            "max_files_per_partition": max(per_partition.values(), default=0),
            "current_metadata_bytes": metadata_files[-1].stat().st_size if metadata_files else 0,
            "metadata_folder_bytes": sum(p.stat().st_size for p in meta_dir.glob("*")),
            "metadata_folder_files": len(list(meta_dir.glob("*"))),
        }
    return stats


JOB_LINE = re.compile(r"finished\s+(ingest|transform)\s+(\S+): .*?(?:(\d+) rows out.*)?, ([0-9.]+)s$")


def jobs_of(err_path):
    """Each job's own seconds (and rows written) from a tick's progress lines."""
    jobs = {}
    for line in err_path.read_text().splitlines():
        m = JOB_LINE.search(line.strip())
        if m:
            jobs[m.group(2)] = {"s": float(m.group(4)),
                                "rows_out": int(m.group(3)) if m.group(3) else None}
    return jobs


def phases(binary, project):
    """Per served tick: seconds from the run's start to its publish, and of its maintenance
    (start to publish), from the run records."""
    out = subprocess.run([str(binary), "--project", str(project), "runs", "--json"],
                         capture_output=True, check=True)
    by_tick = {}
    for r in json.loads(out.stdout):
        # after_run maintenance names its tick in its reason.
        tick = r.get("tick") or (r.get("reason") or "").removeprefix("scheduled tick ")
        if not tick[:4].isdigit():
            continue
        span = (dt.datetime.fromisoformat(r["finished_at"].replace("Z", "+00:00"))
                - dt.datetime.fromisoformat(r["started_at"].replace("Z", "+00:00")))
        by_tick.setdefault(tick, {})[r["kind"]] = round(span.total_seconds(), 3)
    return by_tick


def time_query(binary, project, repeat=5):
    times = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        out = subprocess.run([str(binary), "--project", str(project), "query", QUERY, "--json"],
                             capture_output=True, check=True)
        times.append(time.perf_counter() - started)
        result = json.loads(out.stdout)
    return statistics.median(times), result


def walk(binary, data, work, mode, days):
    project = work / mode
    new_project(project, data, mode)
    logs = work / f"{mode}-logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    ticks = []
    for i in range(days):
        day = dt.date(2025, 1, 1) + dt.timedelta(days=i)
        land(project, data, day)
        at = TICKS_FROM + dt.timedelta(days=i)
        now = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        skew = int((at - dt.datetime.now(dt.timezone.utc)).total_seconds())
        m = measure([str(binary), "--project", str(project), "schedule", "tick", "--now", now],
                    logs / f"{i + 1:03}.out", logs / f"{i + 1:03}.err",
                    env={**os.environ, "PIPELINE_CLOCK_SKEW": str(skew)})
        if m["exit_code"] != 0:
            log((logs / f"{i + 1:03}.err").read_text()[-3000:])
            raise SystemExit(f"{mode}: tick of day {i + 1} failed")
        m["day"] = i + 1
        m["tick"] = at.strftime("%Y-%m-%dT02:00:00Z")
        m["jobs"] = jobs_of(logs / f"{i + 1:03}.err")
        ticks.append(m)
        if (i + 1) in REPORT_DAYS or (i + 1) % 30 == 0:
            log(f"  {mode} day {i + 1:3}: {m['wall_s']:.2f}s wall, {m['cpu_s']:.2f}s cpu, "
                f"{m['peak_rss_mib']:.0f} MiB")
    return project, ticks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--orders", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--modes", nargs="+", default=["default", "off"], choices=sorted(MODES))
    ap.add_argument("--flat", action="store_true",
                    help="generate the same volume every month (isolates history from season)")
    args = ap.parse_args()
    binary = args.binary.resolve()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    ensure_data(args.orders, data, args.seed, args.flat)

    results = {"orders": args.orders, "seed": args.seed, "days": args.days, "flat": args.flat,
               "binary": str(binary), "started": dt.datetime.now().isoformat(), "modes": {}}
    projects = {}
    for mode in args.modes:
        log(f"{mode}: walking {args.days} daily ticks")
        started = time.perf_counter()
        project, ticks = walk(binary, data, work, mode, args.days)
        projects[mode] = project
        stats = table_stats(binary, project)
        spans = phases(binary, project)
        for t in ticks:
            t["phases"] = spans.get(t["tick"], {})
        results["modes"][mode] = {"ticks": ticks, "tables": stats,
                                  "total_s": round(time.perf_counter() - started, 1)}

    # The same data in one run.
    oneshot = work / "oneshot"
    new_project(oneshot, data, "default")
    for i in range(args.days):
        land(oneshot, data, dt.date(2025, 1, 1) + dt.timedelta(days=i))
    load = measure([str(binary), "--project", str(oneshot), "run", "retail", "--json"],
                   work / "oneshot.out", work / "oneshot.err")
    results["oneshot"] = {"load": load, "tables": table_stats(binary, oneshot)}
    q_one, rows_one = time_query(binary, oneshot)
    results["oneshot"]["query_s"] = round(q_one, 3)
    for mode, project in projects.items():
        q, rows = time_query(binary, project)
        results["modes"][mode]["query_s"] = round(q, 3)
        results["modes"][mode]["query_same_rows_as_oneshot"] = rows == rows_one

    log("\n| mode | day 1 | day 30 | day 180 | day 365 | 365/30 | peak RSS d30 / d365 (MiB) | "
        "max files/partition | June query (s) | query / one-run |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for mode, r in results["modes"].items():
        by_day = {t["day"]: t for t in r["ticks"]}
        d = [by_day.get(x, {}).get("wall_s") for x in REPORT_DAYS]
        ratio = (d[3] / d[1]) if d[1] and d[3] else None
        max_files = max(t["max_files_per_partition"] for t in r["tables"].values())
        r["day_365_over_day_30"] = ratio
        r["query_over_oneshot"] = r["query_s"] / q_one
        rss = (by_day.get(30, {}).get("peak_rss_mib"), by_day.get(365, {}).get("peak_rss_mib"))
        log(f"| {mode} | {d[0]} | {d[1]} | {d[2]} | {d[3]} | "
            f"{ratio:.2f} | {rss[0]} / {rss[1]} | {max_files} | {r['query_s']} | "
            f"{r['query_s'] / q_one:.2f} |" if ratio else f"| {mode} | {d} |")
    log(f"\none-run load: {load['wall_s']}s; June query on it: {q_one:.3f}s")
    log("\nwhere a tick's time goes (s): run start to publish, maintenance, and the slowest "
        "jobs (silver.orders rows written: the month being replaced)")
    for mode, r in results["modes"].items():
        by_day = {t["day"]: t for t in r["ticks"]}
        for x in REPORT_DAYS:
            t = by_day.get(x)
            if not t:
                continue
            jobs = t["jobs"]
            top = sorted(jobs.items(), key=lambda kv: -kv[1]["s"])[:4]
            rows = jobs.get("silver.orders", {}).get("rows_out")
            log(f"  {mode:10} day {x:3}: wall {t['wall_s']:.2f}, run {t['phases'].get('run')}, "
                f"maintain {t['phases'].get('maintain')}, silver.orders rows {rows}; "
                + ", ".join(f"{k} {v['s']:.2f}" for k, v in top))
    log("\nper table after the year (data files, most in a partition, current metadata KiB, "
        "metadata folder KiB):")
    for mode, r in results["modes"].items():
        log(f"  {mode}:")
        for name, s in r["tables"].items():
            log(f"    {name:32} {s['data_files']:5} {s['max_files_per_partition']:4} "
                f"{s['current_metadata_bytes'] / 1024:9.1f} {s['metadata_folder_bytes'] / 1024:10.1f}")
    (work / "year-results.json").write_text(json.dumps(results, indent=1))
    log(f"\nwrote {work / 'year-results.json'}")


if __name__ == "__main__":
    main()
