#!/usr/bin/env python3
"""Benchmark: `pipeline run retail` on the embedded catalog, on S3 Tables (moto) and on a REST
catalog signed with SigV4 (rustberg over moto's S3, behind tests/servers/sigv4_proxy.py).

    python3 tests/bench/remote.py --sizes 1000000 --binary target/release/pipeline \
        --work /tmp/pipeline-bench [--repeat 2] [--seed 42] \
        [--rustberg ~/.cache/pipeline-ci/rustberg-0.3.0/bin/rustberg]

Data as tests/bench/run.py makes it (WORK/N, reused). moto is started once; each repeat of a
remote mode gets a fresh table bucket (S3 Tables) or a fresh rustberg with a fresh S3 bucket
behind a fresh proxy (REST), so every run starts from an empty catalog. The modes alternate.
Per run: the engine's wall, CPU and peak RSS (os.wait4 of its process), and the CPU the
servers spent meanwhile (moto, rustberg, the proxy: /proc of their processes), since on this
machine they share the two cores with the engine. Row counts per table must agree across
modes. Results go to WORK/remote-results.json.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from run import ensure_data, load_json, log, measure, refresh_spec, tail, warm_cache  # noqa: E402

KEY, SECRET, REGION = "AKIABENCHREMOTE", "bench-secret-never-print", "us-east-1"


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_http(url: str, proc: subprocess.Popen, what: str) -> None:
    for _ in range(300):
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except Exception:
            if proc.poll() is not None:
                raise SystemExit(f"{what} exited")
            time.sleep(0.1)
    raise SystemExit(f"{what} did not answer at {url}")


def cpu_seconds(pids) -> float:
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total


class Servers:
    def __init__(self, rustberg: Path, work: Path):
        self.rustberg, self.work = rustberg, work
        port = free_port()
        self.moto_url = f"http://127.0.0.1:{port}"
        self.moto = subprocess.Popen([sys.executable, str(REPO / "tests/servers/moto_server.py"),
                                      "--host", "127.0.0.1", "--port", str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_http(f"{self.moto_url}/moto-api/", self.moto, "moto")
        import boto3
        self.s3tables = boto3.client("s3tables", endpoint_url=self.moto_url, region_name=REGION,
                                     aws_access_key_id=KEY, aws_secret_access_key=SECRET)
        self.extra = []

    def storage(self) -> str:
        return (f'region = "{REGION}"\ns3_endpoint = "{self.moto_url}"\npath_style_access = true\n'
                'access_key_id_env = "BENCH_KEY"\nsecret_access_key_env = "BENCH_SECRET"\n')

    def s3tables_section(self) -> str:
        arn = self.s3tables.create_table_bucket(name="tb" + uuid.uuid4().hex[:12])["arn"]
        return (f'\n[catalogs.remote]\ntype = "s3tables"\ntable_bucket_arn = "{arn}"\n'
                f'endpoint_url = "{self.moto_url}"\n{self.storage()}')

    def rest_section(self) -> str:
        self.stop_extra()
        bucket = "wh" + uuid.uuid4().hex[:12]
        urllib.request.urlopen(urllib.request.Request(f"{self.moto_url}/{bucket}", method="PUT"))
        folder = self.work / f"rustberg-{bucket}"
        folder.mkdir(parents=True)
        (folder / "rustberg.toml").write_text(
            f'[storage.properties]\n"s3.endpoint" = "{self.moto_url}"\n"s3.path-style-access" = "true"\n'
            f'"s3.region" = "{REGION}"\n"s3.access-key-id" = "{KEY}"\n"s3.secret-access-key" = "{SECRET}"\n\n'
            '[rate_limit]\nenabled = false\n\n[audit]\nsink = "none"\n')
        port = free_port()
        rb = subprocess.Popen([str(self.rustberg), "--no-auth", "--config", str(folder / "rustberg.toml"),
                               "--dev", "--insecure-http", "--host", "127.0.0.1", "--port", str(port),
                               "--catalog-url", f"file://{folder / 'catalog'}",
                               "--warehouse", f"s3://{bucket}/wh", "--log-level", "warn"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_http(f"http://127.0.0.1:{port}/ready", rb, "rustberg")
        proxy = subprocess.Popen([sys.executable, str(REPO / "tests/servers/sigv4_proxy.py"),
                                  "--target", f"http://127.0.0.1:{port}", "--key", KEY, "--secret", SECRET,
                                  "--region", REGION, "--service", "s3tables"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        proxy_port = int(proxy.stdout.readline())
        self.extra = [rb, proxy]
        return (f'\n[catalogs.remote]\ntype = "rest"\nuri = "http://127.0.0.1:{proxy_port}"\n'
                f'signing = "sigv4"\nsigning_name = "s3tables"\n{self.storage()}')

    def pids(self):
        return [self.moto.pid] + [p.pid for p in self.extra]

    def stop_extra(self):
        for p in self.extra:
            p.kill()
            p.wait()
        self.extra = []

    def stop(self):
        self.stop_extra()
        self.moto.kill()
        self.moto.wait()


def run_mode(binary: Path, data: Path, servers: Servers, mode: str, spec: str) -> dict:
    shutil.rmtree(data / "warehouse", ignore_errors=True)
    section = {"embedded": lambda: "", "s3tables": servers.s3tables_section,
               "rest_sigv4": servers.rest_section}[mode]()
    (data / "pipelines/retail.toml").write_text(spec + section)
    argv = [str(binary), "--project", str(data), "run", "retail", "--json"]
    if section:
        argv += ["--catalog", "remote"]
    os.environ.update(BENCH_KEY=KEY, BENCH_SECRET=SECRET)
    before = cpu_seconds(servers.pids())
    out, err = data / f"{mode}.stdout.json", data / f"{mode}.stderr.log"
    m = measure(argv, out, err)
    m["servers_cpu_s"] = round(cpu_seconds(servers.pids()) - before, 3)
    report = load_json(out)
    if m["exit_code"] != 0 or report is None:
        log(f"  {mode} FAILED (exit {m['exit_code']}):\n{tail(err)}")
        m["failed"] = True
        return m
    m["rows"] = {j["table"]: j["rows_out"] for j in report["jobs"]}
    m["jobs"] = {j["table"]: j["seconds"] for j in report["jobs"]}
    return m


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", required=True)
    ap.add_argument("--binary", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--rustberg", type=Path,
                    default=Path.home() / ".cache/pipeline-ci/rustberg-0.3.0/bin/rustberg")
    args = ap.parse_args()
    servers = Servers(args.rustberg, args.work / "servers")
    modes = ["embedded", "s3tables", "rest_sigv4"]
    results = {}
    try:
        for n in args.sizes:
            data = args.work / str(n)
            ensure_data(n, data, args.seed)
            refresh_spec(data)
            warm_cache(data)
            spec = (data / "pipelines/retail.toml").read_text()
            runs = {m: [] for m in modes}
            for r in range(args.repeat):
                for mode in modes:
                    m = run_mode(args.binary.resolve(), data, servers, mode, spec)
                    log(f"N={n} repeat {r + 1} {mode}: {m['wall_s']}s wall, {m['cpu_s']}s cpu, "
                        f"{m['peak_rss_mib']} MiB, servers {m['servers_cpu_s']}s cpu")
                    runs[mode].append(m)
            (data / "pipelines/retail.toml").write_text(spec)
            med = {mode: {k: statistics.median(x[k] for x in rs) for k in
                          ("wall_s", "cpu_s", "peak_rss_mib", "servers_cpu_s")}
                   for mode, rs in runs.items()}
            same = all(x.get("rows") == runs["embedded"][0].get("rows") for rs in runs.values() for x in rs)
            results[n] = {"runs": runs, "median": med, "same_rows": same}
            log(f"\nN={n} medians (same rows: {same})")
            log("| mode | wall s | CPU s | peak RSS MiB | servers CPU s | wall / embedded |")
            log("|---|---:|---:|---:|---:|---:|")
            for mode in modes:
                x = med[mode]
                log(f"| {mode} | {x['wall_s']:.2f} | {x['cpu_s']:.2f} | {x['peak_rss_mib']:.0f} | "
                    f"{x['servers_cpu_s']:.2f} | {x['wall_s'] / med['embedded']['wall_s']:.2f}x |")
    finally:
        servers.stop()
    (args.work / "remote-results.json").write_text(json.dumps(results, indent=1))
    log(f"wrote {args.work / 'remote-results.json'}")


if __name__ == "__main__":
    main()
