#!/usr/bin/env python3
"""Retail on one machine vs on a Ballista cluster (one and two executors) on the same machine.

    python3 tests/bench/ballista.py --sizes 5000000 20000000 \\
        --binary target/release/pipeline --work /tmp/pipeline-bench [--repeat 2] [--partitions 16]

For each size it generates (or reuses, as run.py does) the seeded data, then runs `pipeline run
retail` from an empty warehouse in each mode, alternating modes within each repetition:

* local: the transforms in the `pipeline` process;
* ballista-1 / ballista-2: `pipeline scheduler` and one or two `pipeline executor` processes
  (two task slots each) on 127.0.0.1, the run with `--engine df://...`.

It reports wall time, the CPU and peak RSS of the driver and of the executors (read from
/proc while they run), and per transform the seconds of each mode; it checks that every mode
wrote the same rows per table; it sums the scheduler's per-operator metrics (elapsed_compute,
shuffle write_time) per transform from its log, to show where a cluster run's time goes.
Results go to WORK/ballista-results.json.

On one 2-core machine a cluster cannot be faster than the local engine: every executor shares
the same two cores. What this measures is the cluster's overhead (planning on the scheduler,
shuffles through Arrow IPC files, Flight transfers, task scheduling).
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as bench  # noqa: E402  (ensure_data, refresh_spec, warm_cache, measure, ...)

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Cluster:
    """A scheduler and `executors` executors of `binary`, logging to `folder`."""

    def __init__(self, binary: Path, executors: int, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        env = dict(os.environ, PIPELINE_LOG="info")
        self.scheduler_log = folder / "scheduler.log"
        self.scheduler = subprocess.Popen(
            [str(binary), "scheduler", "--bind", f"127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=open(self.scheduler_log, "wb"), env=env)
        wait_port(self.port)
        self.executors = []
        for i in range(executors):
            flight, grpc = free_port(), free_port()
            work = folder / f"executor-{i}"
            shutil.rmtree(work, ignore_errors=True)
            self.executors.append(subprocess.Popen(
                [str(binary), "executor", "--scheduler", f"127.0.0.1:{self.port}",
                 "--bind", f"127.0.0.1:{flight}", "--grpc-port", str(grpc),
                 "--concurrent-tasks", "2", "--work-dir", str(work)],
                stdout=subprocess.DEVNULL, stderr=open(folder / f"executor-{i}.log", "wb")))
            wait_port(flight)
        time.sleep(1.0)  # let the executors register
        self.cpu_before = [cpu_seconds(e.pid) for e in self.executors]

    def url(self) -> str:
        return f"df://127.0.0.1:{self.port}"

    def usage(self) -> dict:
        cpu = sum(cpu_seconds(e.pid) - b for e, b in zip(self.executors, self.cpu_before))
        rss = [round(peak_rss_mib(e.pid), 1) for e in self.executors]
        return {"executors_cpu_s": round(cpu, 3), "executors_peak_rss_mib": rss,
                "scheduler_cpu_s": round(cpu_seconds(self.scheduler.pid), 3)}

    def stop(self) -> None:
        for p in self.executors + [self.scheduler]:
            p.terminate()
        for p in self.executors + [self.scheduler]:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def run_mode(binary: Path, data: Path, mode: str, partitions: int) -> dict:
    shutil.rmtree(data / "warehouse", ignore_errors=True)
    out, err = data / f"{mode}.stdout.json", data / f"{mode}.stderr.log"
    argv = [str(binary), "--project", str(data), "run", "retail", "--json"]
    cluster = None
    if mode != "local":
        cluster = Cluster(binary, int(mode.split("-")[1]), data / f"cluster-{mode}")
        spec = data / "pipelines" / "retail.toml"
        spec.write_text(spec.read_text() + f'\n[engine]\ntype = "ballista"\n'
                        f'url = "{cluster.url()}"\npartitions = {partitions}\n')
        argv += ["--engine", "ballista"]
    try:
        m = bench.measure(argv, out, err)
        if cluster is not None:
            m.update(cluster.usage())
    finally:
        if cluster is not None:
            cluster.stop()
            bench.refresh_spec(data)
    report = bench.load_json(out)
    if m["exit_code"] != 0 or report is None:
        bench.log(f"  {mode} FAILED (exit {m['exit_code']}); {err}:\n{bench.tail(err)}")
        m["failed"] = True
        return m
    m["jobs"] = {j["table"]: {"seconds": j["seconds"], "rows_out": j["rows_out"],
                              "engine": j.get("engine")}
                 for j in report["jobs"]}
    m["rows"] = {t: j["rows_out"] for t, j in m["jobs"].items()}
    if cluster is not None:
        m["operators"] = operator_times(cluster.scheduler_log)
    return m


METRIC = re.compile(r"^\s*(\w+):.*metrics=\[(.*)\]")
DURATION = re.compile(r"(elapsed_compute|write_time|fetch_time)=([\d.]+)(ns|µs|ms|s)\b")
UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def operator_times(log: Path) -> dict:
    """Seconds per transform and operator (elapsed_compute; a shuffle writer's write_time, a
    reader's fetch_time) summed over the stages the scheduler logged as finished."""
    names = {}
    per_table = defaultdict(lambda: defaultdict(float))
    job = None
    for line in log.read_text(errors="replace").splitlines():
        m = re.search(r'job_id: "(\w+)", job_name: "[^"]* (\S+)"', line)
        if m:
            names[m.group(1)] = m.group(2)
        m = re.search(r"=== \[(\w+)/\d+\] Stage finished", line)
        if m:
            job = m.group(1)
            continue
        m = METRIC.match(line)
        if m and job:
            for kind, value, unit in DURATION.findall(m.group(2)):
                per_table[names.get(job, job)][f"{m.group(1)}.{kind}"] += float(value) * UNITS[unit]
    return {t: dict(sorted(((k, round(v, 3)) for k, v in ops.items()), key=lambda kv: -kv[1])[:8])
            for t, ops in per_table.items()}


def median(values):
    return round(statistics.median(values), 3) if values else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", required=True)
    ap.add_argument("--binary", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--modes", nargs="+", default=["local", "ballista-1", "ballista-2"])
    args = ap.parse_args()
    binary = args.binary.resolve()
    results = {"host": bench.host_info(), "engine": bench.engine_version(binary),
               "partitions": args.partitions, "sizes": {}}
    for n in args.sizes:
        data = (args.work / str(n)).resolve()
        bench.ensure_data(n, data, args.seed)
        bench.refresh_spec(data)
        bench.warm_cache(data)
        runs = defaultdict(list)
        for rep in range(args.repeat):
            for mode in args.modes:
                bench.log(f"{n} orders, {mode}, repetition {rep + 1} ...")
                m = run_mode(binary, data, mode, args.partitions)
                bench.log(f"  wall {m['wall_s']} s, driver CPU {m['cpu_s']} s, "
                          f"executors CPU {m.get('executors_cpu_s', '-')} s, "
                          f"driver RSS {m['peak_rss_mib']} MiB, "
                          f"executors RSS {m.get('executors_peak_rss_mib', '-')}")
                runs[mode].append(m)
        summary = {}
        reference = runs[args.modes[0]][0].get("rows")
        for mode, ms in runs.items():
            ok = [m for m in ms if not m.get("failed")]
            summary[mode] = {
                "wall_s": median([m["wall_s"] for m in ok]),
                "driver_cpu_s": median([m["cpu_s"] for m in ok]),
                "executors_cpu_s": median([m.get("executors_cpu_s", 0) for m in ok]),
                "driver_peak_rss_mib": median([m["peak_rss_mib"] for m in ok]),
                "executors_peak_rss_mib": max((max(m.get("executors_peak_rss_mib") or [0])
                                               for m in ok), default=0),
                "same_rows_as_" + args.modes[0]: all(m.get("rows") == reference for m in ok),
                "job_seconds": {t: median([m["jobs"][t]["seconds"] for m in ok])
                                for t in (ok[0]["jobs"] if ok else {})},
                "engines": ok[0]["jobs"] and {t: j["engine"] for t, j in ok[0]["jobs"].items()
                                              if j["engine"]} if ok else {},
                "operators": ok[-1].get("operators") if ok else None,
                "runs": ms,
            }
        results["sizes"][str(n)] = summary
        bench.log(json.dumps({m: {k: v for k, v in s.items() if k not in ("runs", "operators")}
                              for m, s in summary.items()}, indent=1))
    out = args.work / "ballista-results.json"
    out.write_text(json.dumps(results, indent=1))
    bench.log(f"results: {out}")


if __name__ == "__main__":
    main()
