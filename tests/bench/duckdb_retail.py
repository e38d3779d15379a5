#!/usr/bin/env python3
"""The DuckDB peer of `pipeline run retail`: the same medallion pipeline, same files, same SQL.

    python3 tests/bench/duckdb_retail.py PROJECT_DIR OUT_DIR [--compare-expected FILE]

Reads PROJECT_DIR/pipelines/retail.toml for what the engine would do and does it with
DuckDB (default settings and thread count), writing ZSTD Parquet under OUT_DIR:

* bronze (every [[ingest]]): read_csv / read_json over the spec's globs with the declared
  column types and `ignore_errors = true` (unparsable records are dropped instead of
  quarantined), plus the lineage columns `_source_file` (file name), `_source_line`
  (row_number() OVER (), any per-row number will do), `_ingested_at` (now) and `_run_id`
  (a constant). Tables with `partition_by = ["month(col)"]` are written with
  COPY ... (PARTITION_BY (col_month)) where col_month is a derived 'YYYY-MM' column.
* silver and gold (every [[transform]]): the repository's own SQL file, with each
  `ns.table` reference replaced by read_parquet('OUT_DIR/ns/table/**/*.parquet',
  hive_partitioning = false), written with COPY (partitioned by month like the engine
  where the spec says so).

* expectations (every [[expect]]): the same checks as count queries over the output.

Stages run in the spec's dependency order (ingests, then transforms topologically
sorted by the tables their SQL reads; for retail that is the order of the file).

Progress goes to stderr; stdout gets one JSON document at the end:
    {"tool": "duckdb", "version": ..., "threads": ..., "seconds": total,
     "counts": {"bronze.pos_orders": rows, ...}, "stage_seconds": {...}}

--compare-expected FILE compares the gold tables found in FILE (the format of
tests/expected/retail.json) with DuckDB's output and prints the differences to stderr.
"""

import argparse
import json
import re
import shutil
import sys
import time
import tomllib
import uuid
from pathlib import Path

import duckdb

# Spec column types -> DuckDB types.
TYPES = {
    "long": "BIGINT", "int": "INTEGER", "integer": "INTEGER", "string": "VARCHAR",
    "timestamp": "TIMESTAMP", "timestamptz": "TIMESTAMPTZ", "date": "DATE",
    "double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "bool": "BOOLEAN",
}

# partition_by transforms -> (strftime format of the derived column, its name suffix).
PARTITION_TRANSFORMS = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}

TABLE_REF = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def quote_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def duck_type(spec_type: str) -> str:
    t = spec_type.strip().lower()
    if t.startswith("decimal"):
        return t.upper()  # decimal(10,2) -> DECIMAL(10,2)
    return TYPES.get(t, t.upper())


def partition_column(spec: str) -> tuple:
    """'month(order_ts)' -> ('order_ts_month', "strftime(order_ts, '%Y-%m')");
    an identity partition 'country' -> ('country', None)."""
    m = re.fullmatch(r"\s*(\w+)\s*\(\s*(\w+)\s*\)\s*", spec)
    if not m:
        return spec.strip(), None
    fn, col = m.group(1).lower(), m.group(2)
    if fn not in PARTITION_TRANSFORMS:
        raise SystemExit(f"unsupported partition transform {spec!r}")
    return f"{col}_{fn}", f"strftime({col}, '{PARTITION_TRANSFORMS[fn]}')"


class Peer:
    def __init__(self, project: Path, out: Path):
        self.project = project
        self.out = out
        self.con = duckdb.connect()  # in memory, default threads and memory limit
        tmp = out / ".duckdb_tmp"
        self.con.execute(f"SET temp_directory = {quote_str(str(tmp))}")
        self.run_id = str(uuid.uuid4())
        self.counts = {}
        self.seconds = {}

    def table_dir(self, table: str) -> Path:
        ns, name = table.split(".", 1)
        return self.out / ns / name

    def parquet_ref(self, table: str) -> str:
        pattern = str(self.table_dir(table) / "**" / "*.parquet")
        return f"read_parquet({quote_str(pattern)}, hive_partitioning = false)"

    def copy(self, table: str, select: str, partition_by: list) -> None:
        """COPY (select) to OUT/ns/table as ZSTD Parquet, optionally partitioned."""
        target = self.table_dir(table)
        target.parent.mkdir(parents=True, exist_ok=True)
        options = "FORMAT parquet, COMPRESSION zstd"
        if partition_by:
            derived = []
            names = []
            for spec in partition_by:
                name, expr = partition_column(spec)
                names.append(name)
                if expr:
                    derived.append(f"{expr} AS {name}")
            extra = (", " + ", ".join(derived)) if derived else ""
            select = f"SELECT *{extra} FROM (\n{select}\n)"
            options += f", PARTITION_BY ({', '.join(names)})"
            dest = target
        else:
            target.mkdir(parents=True, exist_ok=True)
            dest = target / "data.parquet"
        started = time.perf_counter()
        rows = self.con.execute(
            f"COPY (\n{select}\n) TO {quote_str(str(dest))} ({options})"
        ).fetchone()[0]
        took = time.perf_counter() - started
        self.counts[table] = rows
        self.seconds[table] = round(took, 3)
        log(f"  {table:<24} {rows:>12} rows  {took:8.2f}s")

    # -- bronze --------------------------------------------------------------------------

    def ingest(self, job: dict) -> None:
        paths = job["path"] if isinstance(job["path"], list) else [job["path"]]
        globs = "[" + ", ".join(quote_str(str(self.project / p)) for p in paths) + "]"
        schema = job["schema"]
        columns = "{" + ", ".join(
            f"{quote_str(c)}: {quote_str(duck_type(t))}" for c, t in schema.items()
        ) + "}"
        fmt = job["format"].lower()
        if fmt == "csv":
            # The dialect is given, not sniffed: a sniff of the first file (which may hold
            # no quoted fields) could pick another escape and drop rows with "" inside quotes.
            reader = (f"read_csv({globs}, header = true, delim = ',', quote = '\"', "
                      f"escape = '\"', columns = {columns}, ignore_errors = true, "
                      f"filename = true)")
        elif fmt in ("json", "jsonl", "ndjson"):
            reader = (f"read_json({globs}, format = 'newline_delimited', columns = {columns}, "
                      f"ignore_errors = true, filename = true)")
        else:
            raise SystemExit(f"unsupported ingest format {fmt!r}")
        cols = ", ".join(schema)
        select = (
            f"SELECT {cols},\n"
            f"       filename AS _source_file,\n"
            f"       row_number() OVER () AS _source_line,\n"
            f"       now() AS _ingested_at,\n"
            f"       {quote_str(self.run_id)} AS _run_id\n"
            f"FROM {reader}"
        )
        self.copy(job["table"], select, job.get("partition_by", []))

    # -- expectations --------------------------------------------------------------------

    def audit(self, expectations: list) -> None:
        """The spec's [[expect]] checks the engine audits before publishing, as count queries
        over the written tables (so both tools do the same work). Checks the retail spec
        does not use are refused rather than skipped."""
        started = time.perf_counter()
        for e in expectations:
            ref = self.parquet_ref(e["table"])
            check = e["check"]
            if check == "unique":
                cols = ", ".join(e.get("columns") or [e["column"]])
                sql = (f"SELECT count(*) FROM (SELECT {cols} FROM {ref} "
                       f"GROUP BY {cols} HAVING count(*) > 1)")
            elif check == "not_null":
                sql = f"SELECT count(*) FROM {ref} WHERE {e['column']} IS NULL"
            elif check == "relationships":
                to_table, to_col = e["to"].rsplit(".", 1)
                col = e["column"]
                sql = (f"SELECT count(*) FROM {ref} WHERE {col} IS NOT NULL AND {col} NOT IN "
                       f"(SELECT {to_col} FROM {self.parquet_ref(to_table)} "
                       f"WHERE {to_col} IS NOT NULL)")
            elif check == "volume":
                sql = f"SELECT count(*) FROM {ref}"
            else:
                raise SystemExit(f"the peer does not implement check {check!r}")
            found = self.con.execute(sql).fetchone()[0]
            log(f"  expect {check}({e['table']}): {found}")
        took = time.perf_counter() - started
        self.seconds["expectations"] = round(took, 3)
        log(f"  {'expectations':<24} {len(expectations):>12} checks {took:8.2f}s")

    # -- silver / gold -------------------------------------------------------------------

    def transform(self, job: dict, known: set) -> None:
        sql = (self.project / job["sql"]).read_text(encoding="utf-8").strip().rstrip(";")

        def swap(m: re.Match) -> str:
            ref = f"{m.group(1)}.{m.group(2)}"
            return self.parquet_ref(ref) if ref in known else m.group(0)

        self.copy(job["table"], TABLE_REF.sub(swap, sql), job.get("partition_by", []))


def job_order(spec: dict, project: Path) -> list:
    """[('ingest'|'transform', job)] with every transform after the tables it reads."""
    ingests = spec.get("ingest", [])
    transforms = spec.get("transform", [])
    known = {j["table"] for j in ingests + transforms}
    deps = {}
    for t in transforms:
        sql = (project / t["sql"]).read_text(encoding="utf-8")
        refs = {f"{a}.{b}" for a, b in TABLE_REF.findall(sql)}
        deps[t["table"]] = (refs & known) - {t["table"]}
    done = {j["table"] for j in ingests}
    order = [("ingest", j) for j in ingests]
    pending = list(transforms)
    while pending:
        ready = [t for t in pending if deps[t["table"]] <= done]
        if not ready:
            raise SystemExit("cyclic or unresolved table references in the transforms")
        t = ready[0]  # stable: the first ready job in file order
        order.append(("transform", t))
        done.add(t["table"])
        pending.remove(t)
    return order


def as_text(v):
    """A value as tests/expected/retail.json writes it (strings, or null)."""
    if v is None:
        return None
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return str(v)


def compare_expected(peer: Peer, expected_path: Path) -> int:
    """Prints how DuckDB's gold tables differ from the expected ones; returns #differences."""
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    problems = 0
    for table, exp in expected.get("tables", {}).items():
        cols = ", ".join(f'"{c}"' for c in exp["columns"])
        got_rows = peer.con.execute(f"SELECT {cols} FROM {peer.parquet_ref(table)}").fetchall()
        got = sorted((tuple(as_text(v) for v in r) for r in got_rows), key=repr)
        want = sorted((tuple(r) for r in exp["rows"]), key=repr)
        missing = [r for r in want if r not in got]
        extra = [r for r in got if r not in want]
        status = "same" if not missing and not extra else "DIFFERENT"
        log(f"  {table:<24} expected {len(want):>4} rows, duckdb {len(got):>4}: {status}")
        for r in missing:
            log(f"      only expected: {r}")
        for r in extra:
            log(f"      only duckdb:   {r}")
        problems += len(missing) + len(extra)
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--pipeline", default="retail")
    ap.add_argument("--compare-expected", type=Path, metavar="FILE")
    args = ap.parse_args()
    project, out = args.project.resolve(), args.out.resolve()
    if out == project or project.is_relative_to(out):
        sys.exit(f"OUT_DIR {out} must be a separate folder, not the project or above it")

    started = time.perf_counter()
    spec = tomllib.loads((project / "pipelines" / f"{args.pipeline}.toml").read_text())
    order = job_order(spec, project)
    known = {job["table"] for _, job in order}

    # A fresh output: remove only what this script writes.
    out.mkdir(parents=True, exist_ok=True)
    for ns in sorted({t.split(".")[0] for t in known}) + [".duckdb_tmp"]:
        if (out / ns).exists():
            shutil.rmtree(out / ns)

    peer = Peer(project, out)
    threads = peer.con.execute("SELECT current_setting('threads')").fetchone()[0]
    log(f"duckdb {duckdb.__version__}, {threads} threads: {project} -> {out}")
    for kind, job in order:
        if kind == "ingest":
            peer.ingest(job)
        else:
            peer.transform(job, known)
    peer.audit(spec.get("expect", []))
    total = time.perf_counter() - started
    log(f"  total {total:.2f}s")

    differences = 0
    if args.compare_expected:
        log(f"comparing gold tables with {args.compare_expected}:")
        differences = compare_expected(peer, args.compare_expected.resolve())

    print(json.dumps({
        "tool": "duckdb",
        "version": duckdb.__version__,
        "threads": threads,
        "seconds": round(total, 3),
        "counts": peer.counts,
        "stage_seconds": peer.seconds,
        **({"expected_differences": differences} if args.compare_expected else {}),
    }, indent=1))
    shutil.rmtree(out / ".duckdb_tmp", ignore_errors=True)


if __name__ == "__main__":
    main()
