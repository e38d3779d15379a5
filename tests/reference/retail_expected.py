#!/usr/bin/env python3
"""Independent reference implementation of the retail pipeline.

This script re-implements the retail medallion pipeline (bronze -> silver ->
gold) in plain Python 3.11 (standard library only) so that the Rust engine's
output can be checked against values computed by a completely separate code
path. It reads the raw files under sample-data/retail/ and writes the expected
counts, quarantine entries and gold tables to tests/expected/retail.json.

Rerun (from any directory) with:

    python3 tests/reference/retail_expected.py

Conventions of the output file:
  * every value in "rows" is a string or null; integers as "3", decimals with
    exactly two places ("12.50"), dates as "2026-01-15";
  * "quarantine" is sorted by (table, file, line); "line" is the 1-based
    physical line on which the bad record starts (CSV header = line 1);
    "column" is the first column, in schema order, that failed to parse, or
    null for a record-level problem (wrong field count, broken JSON, a JSON
    value that is not an object).
"""

import csv
import datetime
import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = "sample-data/retail"
OUT = REPO / "tests" / "expected" / "retail.json"

CENT = Decimal("0.01")

ORDER_SCHEMA = [
    ("order_id", "long"),
    ("customer_id", "long"),
    ("order_ts", "timestamp"),
    ("product", "string"),
    ("quantity", "int"),
    ("unit_price", "decimal"),
    ("status", "string"),
]
CUSTOMER_SCHEMA = [
    ("customer_id", "long"),
    ("name", "string"),
    ("email", "string"),
    ("country", "string"),
    ("updated_at", "timestamp"),
]


class BadValue(Exception):
    pass


# ---------------------------------------------------------------------------
# Scalar parsing (shared by CSV and JSON where the input is text)
# ---------------------------------------------------------------------------

INT_RE = re.compile(r"[+-]?[0-9]+")
DEC_RE = re.compile(r"[+-]?[0-9]+(\.[0-9]{1,2})?")
TS_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[ T]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
)


def check_integer(value, typ):
    lo, hi = (-(2**31), 2**31 - 1) if typ == "int" else (-(2**63), 2**63 - 1)
    if not lo <= value <= hi:
        raise BadValue(f"{typ} out of range: {value}")
    return value


def check_decimal(value):
    """value is a Decimal; enforce decimal(10,2) without rounding."""
    if value.as_tuple().exponent < -2:
        raise BadValue(f"more than 2 decimals: {value}")
    value = value.quantize(CENT)
    if abs(value) >= Decimal("100000000"):
        raise BadValue(f"decimal(10,2) overflow: {value}")
    return value


def parse_timestamp_text(text):
    m = TS_RE.fullmatch(text)
    if not m:
        raise BadValue(f"bad timestamp: {text!r}")
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    frac = m.group(7)
    micro = int((frac[1:] + "000000")[:6]) if frac else 0
    try:
        return datetime.datetime(y, mo, d, h, mi, s, micro)
    except ValueError as e:
        raise BadValue(f"bad timestamp: {text!r} ({e})")


def parse_text(text, typ):
    """Parse one CSV field. Empty field -> None; numbers/timestamps are trimmed."""
    if text == "":
        return None
    if typ == "string":
        return text  # kept as-is, untrimmed
    t = text.strip()
    if typ in ("long", "int"):
        if not INT_RE.fullmatch(t):
            raise BadValue(f"not an integer: {text!r}")
        return check_integer(int(t), typ)
    if typ == "decimal":
        if not DEC_RE.fullmatch(t):
            raise BadValue(f"not a decimal(10,2): {text!r}")
        return check_decimal(Decimal(t))
    if typ == "timestamp":
        return parse_timestamp_text(t)
    raise AssertionError(typ)


def parse_json_value(value, typ):
    """Parse one JSON value (already decoded, floats as Decimal). null -> None."""
    if value is None:
        return None
    if typ in ("long", "int"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadValue(f"expected JSON integer, got {value!r}")
        return check_integer(value, typ)
    if typ == "decimal":
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise BadValue(f"expected JSON number, got {value!r}")
        return check_decimal(Decimal(value))
    if not isinstance(value, str):
        raise BadValue(f"expected JSON string, got {value!r}")
    if typ == "string":
        return value
    if typ == "timestamp":
        return parse_timestamp_text(value.strip())
    raise AssertionError(typ)


# ---------------------------------------------------------------------------
# File readers -> (good records, quarantine entries, stats)
# ---------------------------------------------------------------------------


def read_csv(rel_path, schema, table):
    text = (REPO / rel_path).read_text(encoding="utf-8")
    phys = text.split("\n")
    if phys and phys[-1] == "":
        phys.pop()
    good, bad = [], []
    with open(REPO / rel_path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f, strict=True)
        header = next(reader)
        assert header == [c for c, _ in schema], (rel_path, header)
        prev_end = reader.line_num
        for fields in reader:
            start, end = prev_end + 1, reader.line_num
            prev_end = end
            raw = "\n".join(phys[start - 1 : end]).rstrip("\r")
            if len(fields) != len(schema):
                bad.append(entry(table, rel_path, start, raw, None,
                                 f"expected {len(schema)} fields, got {len(fields)}"))
                continue
            rec, col, why = {}, None, None
            for (name, typ), value in zip(schema, fields):
                try:
                    rec[name] = parse_text(value, typ)
                except BadValue as e:
                    col, why = name, str(e)
                    break
            if col is None:
                good.append(rec)
            else:
                bad.append(entry(table, rel_path, start, raw, col, why))
    report(rel_path, good, bad)
    return good, bad


def read_jsonl(rel_path, schema, table):
    good, bad = [], []
    text = (REPO / rel_path).read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for lineno, line in enumerate(lines, start=1):
        raw = line.rstrip("\r")
        if raw.strip() == "":
            continue  # blank lines are not records
        try:
            obj = json.loads(raw, parse_float=Decimal)
        except json.JSONDecodeError as e:
            bad.append(entry(table, rel_path, lineno, raw, None, f"invalid JSON: {e}"))
            continue
        if not isinstance(obj, dict):
            bad.append(entry(table, rel_path, lineno, raw, None, "not a JSON object"))
            continue
        rec, col, why = {}, None, None
        for name, typ in schema:  # unknown extra keys are ignored
            try:
                rec[name] = parse_json_value(obj.get(name), typ)
            except BadValue as e:
                col, why = name, str(e)
                break
        if col is None:
            good.append(rec)
        else:
            bad.append(entry(table, rel_path, lineno, raw, col, why))
    report(rel_path, good, bad)
    return good, bad


def entry(table, path, line, raw, column, reason):
    return {"table": table, "file": path, "line": line, "raw": raw,
            "column": column, "_reason": reason}


def report(path, good, bad):
    print(f"{path}: data lines={len(good) + len(bad)} good={len(good)} bad={len(bad)}")
    for b in bad:
        print(f"    line {b['line']}: column={b['column']}: {b['_reason']}")


# ---------------------------------------------------------------------------
# Formatting helpers
# ---------------------------------------------------------------------------


def fmt(v):
    if v is None:
        return None
    if isinstance(v, Decimal):
        return str(v.quantize(CENT))
    if isinstance(v, (datetime.date, int)):
        return str(v) if not isinstance(v, datetime.datetime) else v.isoformat(" ")
    return v


def table(columns, rows):
    return {"columns": columns, "rows": [[fmt(v) for v in r] for r in rows]}


# ---------------------------------------------------------------------------
# Pipeline
# ---------------------------------------------------------------------------


def main():
    quarantine = []

    # ---- bronze ----------------------------------------------------------
    pos_orders, web_orders = [], []
    for name in ["pos_2026-01-15.csv", "pos_2026-02-10.csv", "pos_2026-03-05.csv"]:
        g, b = read_csv(f"{DATA}/orders/{name}", ORDER_SCHEMA, "bronze.pos_orders")
        pos_orders += g
        quarantine += b
    pos_bad = len(quarantine)
    for name in ["web_2026-02.jsonl", "web_2026-03.jsonl"]:
        g, b = read_jsonl(f"{DATA}/web/{name}", ORDER_SCHEMA, "bronze.web_orders")
        web_orders += g
        quarantine += b
    web_bad = len(quarantine) - pos_bad
    customers, b = read_csv(f"{DATA}/customers/customers.csv", CUSTOMER_SCHEMA,
                            "bronze.customers")
    quarantine += b
    cust_bad = len(b)

    # ---- silver.orders ---------------------------------------------------
    silver_orders = {}
    for r in pos_orders + web_orders:
        if any(r[c] is None for c in
               ("order_id", "customer_id", "order_ts", "quantity", "unit_price")):
            continue
        if r["quantity"] <= 0 or r["unit_price"] < 0:
            continue
        status = r["status"]
        if status is not None:
            status = status.strip().lower()
            if status == "canceled":
                status = "cancelled"
        row = {
            "order_id": r["order_id"],
            "customer_id": r["customer_id"],
            "order_ts": r["order_ts"],
            "order_date": r["order_ts"].date(),
            "product": r["product"],
            "quantity": r["quantity"],
            "unit_price": r["unit_price"],
            "amount": (r["quantity"] * r["unit_price"]).quantize(CENT),
            "status": status,
        }
        if row["order_id"] in silver_orders:
            # same order_id is always an exact duplicate in this data set
            assert silver_orders[row["order_id"]] == row, row
            continue
        silver_orders[row["order_id"]] = row

    # ---- silver.customers --------------------------------------------------
    latest = {}
    for r in customers:
        if r["customer_id"] is None:
            continue
        cur = latest.get(r["customer_id"])
        if cur is None or r["updated_at"] > cur["updated_at"]:
            latest[r["customer_id"]] = r
    silver_customers = {}
    for cid, r in latest.items():
        email = r["email"].strip() if r["email"] is not None else None
        silver_customers[cid] = {
            "customer_id": cid,
            "name": r["name"].strip() if r["name"] is not None else None,
            "email": email or None,
            "country": r["country"].strip().upper() if r["country"] is not None else None,
        }

    # ---- gold.fact_orders --------------------------------------------------
    fact = []
    for oid in sorted(silver_orders):
        o = silver_orders[oid]
        c = silver_customers.get(o["customer_id"])
        fact.append({
            **o,
            "customer_name": c["name"] if c else None,
            "country": c["country"] if c else None,
        })
    fact_cols = ["order_id", "order_date", "customer_id", "customer_name", "country",
                 "product", "quantity", "amount", "status"]

    # status <> 'cancelled' (SQL semantics: a NULL status would be excluded too)
    live = [f for f in fact if f["status"] is not None and f["status"] != "cancelled"]

    # ---- gold.customer_metrics ---------------------------------------------
    per_cust = {}
    for f in live:
        if f["customer_id"] in silver_customers:
            per_cust.setdefault(f["customer_id"], []).append(f)
    metrics = []
    for cid in sorted(per_cust):
        rows = per_cust[cid]
        c = silver_customers[cid]
        total = sum((r["amount"] for r in rows), Decimal("0.00"))
        n = len(rows)
        if total >= 1000:
            seg = "Platinum"
        elif total >= 500:
            seg = "Gold"
        elif total >= 200:
            seg = "Silver"
        else:
            seg = "Bronze"
        metrics.append({
            "customer_id": cid,
            "customer_name": c["name"],
            "country": c["country"],
            "orders": n,
            "total_spend": total,
            "avg_order_value": (total / n).quantize(CENT, rounding=ROUND_HALF_UP),
            "first_order_date": min(r["order_date"] for r in rows),
            "last_order_date": max(r["order_date"] for r in rows),
            "segment": seg,
        })
    metric_cols = ["customer_id", "customer_name", "country", "orders", "total_spend",
                   "avg_order_value", "first_order_date", "last_order_date", "segment"]

    # ---- gold.monthly_revenue ----------------------------------------------
    months = {}
    for f in live:
        m = f["order_date"].replace(day=1)
        months.setdefault(m, []).append(f)
    monthly = []
    for m in sorted(months):
        rows = months[m]
        monthly.append([m, len(rows), len({r["customer_id"] for r in rows}),
                        sum((r["amount"] for r in rows), Decimal("0.00"))])

    # ---- gold.repeat_buyers ------------------------------------------------
    buyers = {}
    for m in metrics:
        bt = "repeat" if m["orders"] >= 2 else "one-time"
        cnt, rev = buyers.get(bt, (0, Decimal("0.00")))
        buyers[bt] = (cnt + 1, rev + m["total_spend"])
    repeat = [[bt, cnt, rev] for bt, (cnt, rev) in sorted(buyers.items())]

    # ---- output --------------------------------------------------------------
    quarantine.sort(key=lambda q: (q["table"], q["file"], q["line"]))
    result = {
        "counts": {
            "bronze.pos_orders": len(pos_orders),
            "bronze.pos_orders__quarantine": pos_bad,
            "bronze.web_orders": len(web_orders),
            "bronze.web_orders__quarantine": web_bad,
            "bronze.customers": len(customers),
            "bronze.customers__quarantine": cust_bad,
            "silver.orders": len(silver_orders),
            "silver.customers": len(silver_customers),
        },
        "quarantine": [{k: v for k, v in q.items() if not k.startswith("_")}
                       for q in quarantine],
        "tables": {
            "gold.fact_orders": table(fact_cols, [[f[c] for c in fact_cols] for f in fact]),
            "gold.customer_metrics": table(metric_cols,
                                           [[m[c] for c in metric_cols] for m in metrics]),
            "gold.monthly_revenue": table(["month", "orders", "customers", "revenue"],
                                          monthly),
            "gold.repeat_buyers": table(["buyer_type", "customers", "revenue"], repeat),
        },
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(json.dumps(result["counts"], indent=2))
    print(f"wrote {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
