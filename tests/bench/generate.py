#!/usr/bin/env python3
"""Synthetic retail data for the benchmark, in exactly the formats of sample-data/retail/.

    python3 tests/bench/generate.py N OUT_DIR [--seed 42] [--flat] [--web-share 0.2]
                                    [--malformed 0.01]

Writes a complete project into OUT_DIR:

    OUT_DIR/pipelines/retail.toml            copied from the repository
    OUT_DIR/sql/retail/*.sql                 copied from the repository
    OUT_DIR/sample-data/retail/orders/pos_2025-MM-DD.csv   ~80% of the N orders, one file a day
    OUT_DIR/sample-data/retail/web/web_2025-MM.jsonl       ~20% of the N orders, one file a month
    OUT_DIR/sample-data/retail/customers/customers.csv     max(1000, N // 50) customers
    OUT_DIR/.done                            JSON {n, seed, version, ...}, written last

N counts distinct orders (order ids 1..N). On top of them come the dirty extra lines
(exact duplicates, malformed copies), so the number of data lines is slightly above N.

Dirt, at roughly these rates per order (at most one kind per order):
  1.0%  orphan customer id (no such customer)
  0.3%  non-canonical status (`Shipped`, ` shipped`, `canceled`, ...)
  0.2%  row that breaks a business rule (quantity 0, negative unit price)
  0.1%  malformed line (quantity `two`, price with 3 decimals, wrong field count,
        broken JSON); with --malformed RATE, RATE of the orders, in five kinds: those three
        and an impossible timestamp, a customer id that is not a number
  0.5%  exact duplicate line (re-sent later in the same file or in the next day's file)
  1.0%  late arrival (timestamp from an earlier day than the file's)
Customers: 5% get a later second row (changed country and/or email); some names and
countries have stray whitespace, some countries are lower-case, some emails are missing;
~0.1% malformed extra rows (non-numeric id, missing field).

Output is a pure function of (N, seed): one random.Random(seed) drives everything and
nothing depends on hash ordering or the clock. Lines are built as preformatted strings
and written one file at a time (a few million rows per minute).
"""

import argparse
import datetime as dt
import json
import shutil
import sys
import time
import unicodedata
from pathlib import Path
import random

# Bump when the output for a given (N, seed) changes, so run.py regenerates cached data.
VERSION = 1

REPO = Path(__file__).resolve().parents[2]
YEAR = 2025
DAYS = [dt.date(YEAR, 1, 1) + dt.timedelta(days=i) for i in range(365)]

# ---------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------

# ~200 products: 40 families x 5 variants, each with a fixed list price. Some names carry a
# comma or a double quote (quoted in CSV), a few are non-ASCII.
_FAMILIES = [
    ("Espresso Machine", 349.99), ("Monitor", 219.00), ("Keyboard", 79.99),
    ("Headphones", 129.50), ("Office Chair", 289.00), ("Desk Lamp", 39.90),
    ("Notebook", 3.25), ("Tea", 4.50), ("Backpack", 64.00), ("Laptop Stand", 45.00),
    ("Gift Card", 50.00), ("Cable, USB-C", 9.99), ('Mug, "Large"', 12.50),
    ("Water Bottle", 18.00), ("Mouse", 24.99), ("Webcam", 59.00), ("Speaker", 89.00),
    ("Phone Case", 14.99), ("Charger", 29.99), ("Power Bank", 39.00),
    ("Coffee Beans", 11.90), ("French Press", 34.50), ("Cutting Board", 22.00),
    ("Chef's Knife", 74.00), ("Towel Set", 27.50), ("Pillow", 19.99),
    ("Blanket", 49.00), ("Candle", 8.75), ("Plant Pot", 13.20), ("Yoga Mat", 31.00),
    ("Dumbbells, 2 kg", 25.00), ("Running Shoes", 99.95), ("Socks, 3 pack", 9.50),
    ("T-Shirt", 15.00), ("Hoodie", 45.00), ("Crème Brûlée Torch", 21.00),
    ("Café Grinder", 69.00), ('Poster "Alps"', 16.00), ("Board Game", 38.00),
    ("Puzzle, 1000 pcs", 17.50),
]
_VARIANTS = [("", 1.00), (" Mini", 0.70), (" Pro", 1.60), (" Deluxe", 2.10), (" - Blue", 1.00)]

_FIRST = ["Alice", "Bob", "Carlos", "Dana", "Élodie", "Grace", "Hiro", "Piotr", "Julia",
          "Kofi", "Lena", "Mateo", "Nora", "Oscar", "Priya", "Quentin", "Rosa", "Sven",
          "Tariq", "Uma", "Viktor", "Wen", "Xavier", "Yara", "Zoë", "Amir", "Björn",
          "Chen", "Diego", "Emma", "Farah", "Gustav", "Hana", "Ivan", "Jonas", "Kira",
          "Liam", "Mia", "Noah", "Olga", "Pablo", "Rhea", "Sofia", "Tomás", "Ines"]
_LAST = ["Johnson", "Smith", "Lee", "Ruiz", "Weiss", "Martin", "Kim", "Tanaka", "Nowak",
         "Rossi", "Mensah", "Novak", "Silva", "Berg", "Quinn", "Patel", "Dubois", "García",
         "Müller", "Khan", "Ivanova", "Wang", "Moreau", "Haddad", "Lindqvist", "Okafor",
         "Costa", "Schmidt", "Yamamoto", "Kowalski", "O'Brien", "Nielsen", "Fischer"]
# (code, weight); weights are rough shares of customers.
_COUNTRIES = [("US", 30), ("GB", 12), ("DE", 12), ("FR", 9), ("ES", 6), ("IT", 6),
              ("NL", 4), ("PL", 4), ("SE", 3), ("JP", 4), ("KR", 2), ("CZ", 2),
              ("IE", 2), ("BR", 2), ("GH", 1), ("PT", 1)]
_TLDS = {"US": "com", "GB": "co.uk", "JP": "jp", "BR": "com.br", "GH": "com.gh"}

# 100-entry lookup tables: index with int(random() * 100).
_STATUS_TABLE = ["placed"] * 10 + ["shipped"] * 38 + ["delivered"] * 45 + ["cancelled"] * 7
_QTY_TABLE = [1] * 50 + [2] * 25 + [3] * 12 + [4] * 8 + [5] * 5
_BAD_STATUSES = ["Shipped", " shipped", "canceled", "SHIPPED", "Delivered ", "Cancelled"]

# Cumulative thresholds of the single per-order "dirt" draw (see module docstring).
P_ORPHAN = 0.010
P_STATUS = P_ORPHAN + 0.003
P_INVALID = P_STATUS + 0.002
MALFORMED = 0.001  # the default share of malformed lines (--malformed changes it)
P_MALFORMED = P_INVALID + MALFORMED
P_DUPLICATE = P_MALFORMED + 0.005
P_LATE = P_DUPLICATE + 0.010


def set_malformed(rate: float) -> None:
    """Moves the dirt thresholds for `rate` malformed lines (the other rates stay)."""
    global MALFORMED, P_MALFORMED, P_DUPLICATE, P_LATE
    MALFORMED = rate
    P_MALFORMED = P_INVALID + rate
    P_DUPLICATE = P_MALFORMED + 0.005
    P_LATE = P_DUPLICATE + 0.010


def csv_field(text: str) -> str:
    """RFC 4180 quoting, as csv.writer with QUOTE_MINIMAL does it."""
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def ascii_fold(text: str) -> str:
    """`Élodie` -> `elodie`, for e-mail addresses."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return folded.lower().replace("'", "")


def products():
    """[(csv field, json literal, price as '12.50', price in cents)] for ~200 products."""
    out = []
    for family, base in _FAMILIES:
        for suffix, factor in _VARIANTS:
            name = family + suffix
            cents = max(50, round(base * factor * 100))
            price = f"{cents // 100}.{cents % 100:02d}"
            out.append((csv_field(name), json.dumps(name, ensure_ascii=False), price, cents))
    return out


# "HH:MM:SS" for every second of a day, so a timestamp is one lookup and one concatenation.
CLOCK = [f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}" for s in range(86400)]


def allocate(total: int, weights: list) -> list:
    """Splits `total` into integer parts proportional to `weights` (largest remainder)."""
    s = sum(weights)
    exact = [total * w / s for w in weights]
    parts = [int(x) for x in exact]
    rest = total - sum(parts)
    order = sorted(range(len(weights)), key=lambda i: (parts[i] - exact[i], i))
    for i in order[:rest]:
        parts[i] += 1
    return parts


# `--flat`: every month the same volume (the weekday pattern stays).
FLAT = False
# `--web-share`: the share of orders that come as web JSON Lines (the rest are POS CSV).
WEB_SHARE = 0.2


def season(day: dt.date) -> float:
    """Relative order volume of a day: busier weekends, November and December (unless FLAT)."""
    weekday = [1.0, 0.95, 1.0, 1.05, 1.2, 1.4, 0.8][day.weekday()]
    month = 1.0 if FLAT else {11: 1.3, 12: 1.6, 1: 0.85, 2: 0.85}.get(day.month, 1.0)
    return weekday * month


# ---------------------------------------------------------------------------------------
# Orders
# ---------------------------------------------------------------------------------------


class OrderMaker:
    """Builds order lines (CSV or JSON) for one file at a time, sharing the id counter."""

    def __init__(self, rng: random.Random, n_customers: int):
        self.rng = rng
        self.rnd = rng.random
        self.n_customers = n_customers
        self.n_orphans = max(100, n_customers // 10)
        self.products = products()
        self.next_id = 1
        self.lines = 0  # data lines written (orders plus dirty extras)

    def _customer(self, orphan: bool) -> int:
        r = self.rnd()
        if orphan:
            return self.n_customers + 1 + int(r * self.n_orphans)
        # Skewed towards low ids: some customers buy often, many once or twice.
        return 1 + int(self.n_customers * r * r)

    def order_lines(self, fmt: str, stamps: list, late_days: list):
        """Lines for one file: `stamps` are (date string, second of day) in file order;
        `late_days` are date strings of earlier days for late arrivals.
        Returns (lines, carry): carry = exact duplicate lines for the next file."""
        rnd = self.rnd
        prods = self.products
        n_prod = len(prods)
        lines, tail, carry = [], [], []
        sep = " " if fmt == "csv" else "T"
        for day, sec in stamps:
            oid = self.next_id
            self.next_id += 1
            d = rnd()
            cust = self._customer(d < P_ORPHAN)
            p_csv, p_json, price, cents = prods[int(n_prod * rnd() ** 1.5)]
            qty = _QTY_TABLE[int(rnd() * 100)]
            status = _STATUS_TABLE[int(rnd() * 100)]
            ts = day + sep + CLOCK[sec]
            qty_text = str(qty)
            malformed = None
            if d >= P_ORPHAN and d < P_LATE:
                if d < P_STATUS:
                    status = _BAD_STATUSES[int(rnd() * len(_BAD_STATUSES))]
                elif d < P_INVALID:
                    if rnd() < 0.5:
                        qty_text = "0"
                    else:
                        price = "-" + price
                elif d < P_MALFORMED:
                    malformed = int(rnd() * 3)
                    # The default rate keeps the three kinds (and the draws) of version 1.
                    if MALFORMED != 0.001 and rnd() < 0.4:
                        malformed = 3 + int(rnd() * 2)
                    if malformed == 0:
                        qty_text = '"two"' if fmt == "json" else "two"
                    elif malformed == 1:
                        price = f"{cents // 100}.{cents % 100:02d}5"  # 3 decimals
                    elif malformed == 3:  # a day and a time that do not exist
                        ts = day[:8] + "31" + sep + "25:61:00"
                    elif malformed == 4:
                        cust = f'"C{cust}"' if fmt == "json" else f"C{cust}"
                elif d >= P_DUPLICATE and late_days:  # late arrival
                    ts = late_days[int(rnd() * len(late_days))] + sep + CLOCK[sec]
            if fmt == "csv":
                if malformed == 2:  # wrong field count: status missing
                    line = f"{oid},{cust},{ts},{p_csv},{qty_text},{price}\n"
                else:
                    line = f"{oid},{cust},{ts},{p_csv},{qty_text},{price},{status}\n"
            else:
                line = (f'{{"order_id": {oid}, "customer_id": {cust}, "order_ts": "{ts}", '
                        f'"product": {p_json}, "quantity": {qty_text}, '
                        f'"unit_price": {price}, "status": "{status}"}}\n')
                if malformed == 2:  # broken JSON: the line is cut off
                    line = line[: len(line) // 2] + "\n"
            lines.append(line)
            if P_MALFORMED <= d < P_DUPLICATE:
                # Re-sent later: at the end of this file or at the start of the next one.
                (tail if rnd() < 0.5 else carry).append(line)
        lines.extend(tail)
        self.lines += len(lines)
        return lines, carry


def write_pos(out: Path, maker: OrderMaker, n_pos: int, rng: random.Random) -> list:
    """One CSV per day; the store is open 08:00-21:00. Returns the files written."""
    folder = out / "orders"
    folder.mkdir(parents=True)
    header = "order_id,customer_id,order_ts,product,quantity,unit_price,status\n"
    counts = allocate(n_pos, [season(d) for d in DAYS])
    files, carry = [], []
    for i, (day, k) in enumerate(zip(DAYS, counts)):
        day_s = day.isoformat()
        secs = sorted(8 * 3600 + int(rng.random() * 13 * 3600) for _ in range(k))
        late = [(day - dt.timedelta(days=j)).isoformat() for j in range(1, 8) if i - j >= 0]
        lines, next_carry = maker.order_lines("csv", [(day_s, s) for s in secs], late)
        maker.lines += len(carry)
        path = folder / f"pos_{day_s}.csv"
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(header)
            f.write("".join(carry))
            f.write("".join(lines))
        files.append(path)
        carry = next_carry
    if carry:  # duplicates of the last day go to the end of the last file
        with open(files[-1], "a", encoding="utf-8", newline="") as f:
            f.write("".join(carry))
        maker.lines += len(carry)
    return files


def write_web(out: Path, maker: OrderMaker, n_web: int, rng: random.Random) -> list:
    """One JSON Lines file per month, events around the clock, in time order."""
    folder = out / "web"
    folder.mkdir(parents=True)
    months = [[d for d in DAYS if d.month == m] for m in range(1, 13)]
    counts = allocate(n_web, [sum(season(d) for d in days) for days in months])
    files = []
    for m, (days, k) in enumerate(zip(months, counts), start=1):
        names = [d.isoformat() for d in days]
        picks = sorted((int(rng.random() * len(days)), int(rng.random() * 86400))
                       for _ in range(k))
        stamps = [(names[d], s) for d, s in picks]
        # Late arrivals: events of the last week of the previous month, delivered late.
        first = days[0]
        late = [(first - dt.timedelta(days=j)).isoformat() for j in range(1, 8)] if m > 1 else []
        lines, carry = maker.order_lines("json", stamps, late)
        lines.extend(carry)  # no "next file" for web duplicates: keep them in this month
        maker.lines += len(carry)
        path = folder / f"web_{YEAR}-{m:02d}.jsonl"
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write("".join(lines))
        files.append(path)
    return files


# ---------------------------------------------------------------------------------------
# Customers
# ---------------------------------------------------------------------------------------


def write_customers(out: Path, n: int, rng: random.Random) -> Path:
    folder = out / "customers"
    folder.mkdir(parents=True)
    rnd = rng.random
    country_table = [c for c, w in _COUNTRIES for _ in range(w)]
    t2024 = dt.datetime(2024, 1, 1)

    def stamp(base: dt.datetime, span_days: int) -> str:
        t = base + dt.timedelta(seconds=int(rnd() * span_days * 86400))
        sep = "T" if rnd() < 0.01 else " "  # a few ISO 'T' timestamps, as in the sample
        return t.strftime(f"%Y-%m-%d{sep}%H:%M:%S")

    def country_text(code: str) -> str:
        r = rnd()
        if r < 0.03:
            return code.lower()
        if r < 0.04:
            return " " + code.lower()
        if r < 0.05:
            return code + " "
        return code

    def email_text(first: str, last: str, cid: int, code: str, tag: str = "") -> str:
        r = rnd()
        if r < 0.03:
            return ""  # missing
        if r < 0.035:
            return "   "  # blank
        addr = f"{ascii_fold(first)}.{ascii_fold(last)}{tag}{cid}@example.{_TLDS.get(code, code.lower())}"
        return csv_field(f" {addr} " if r < 0.045 else addr)

    lines = ["customer_id,name,email,country,updated_at\n"]
    people = {}
    for cid in range(1, n + 1):
        first = _FIRST[int(rnd() * len(_FIRST))]
        last = _LAST[int(rnd() * len(_LAST))]
        code = country_table[int(rnd() * len(country_table))]
        people[cid] = (first, last, code)
        r = rnd()
        if r < 0.02:
            name = f"{last}, {first}"  # quoted in CSV
        elif r < 0.03:
            name = f"  {first} {last} "  # stray whitespace
        else:
            name = f"{first} {last}"
        updated = stamp(t2024, 365)
        row = f"{cid},{csv_field(name)},{email_text(first, last, cid, code)},{country_text(code)},{updated}\n"
        m = rnd()
        if m < 0.0005:  # malformed extra row before the good one: non-numeric id
            lines.append(f"C-{cid},{csv_field(name)},,{code},{updated}\n")
        elif m < 0.001:  # malformed extra row: updated_at missing (wrong field count)
            lines.append(f"{cid},{csv_field(name)},,{code}\n")
        lines.append(row)
    # 5% of customers get a later second row (moved country and/or new e-mail) in 2025,
    # appended at the end of the file in update order.
    later = []
    for cid in sorted(rng.sample(range(1, n + 1), n // 20)):
        first, last, code = people[cid]
        if rnd() < 0.6:
            code = country_table[int(rnd() * len(country_table))]
        email = email_text(first, last, cid, code, tag=".new")
        later.append((stamp(dt.datetime(YEAR, 1, 1), 360), cid, first, last, email, code))
    later.sort()
    for updated, cid, first, last, email, code in later:
        lines.append(f"{cid},{csv_field(first + ' ' + last)},{email},{country_text(code)},{updated}\n")
    path = folder / "customers.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(lines))
    return path


# ---------------------------------------------------------------------------------------


def copy_project(out: Path) -> None:
    """pipelines/retail.toml and sql/retail/*.sql, so OUT_DIR is a complete project."""
    (out / "pipelines").mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "pipelines" / "retail.toml", out / "pipelines" / "retail.toml")
    (out / "sql" / "retail").mkdir(parents=True, exist_ok=True)
    for sql in sorted((REPO / "sql" / "retail").glob("*.sql")):
        shutil.copy2(sql, out / "sql" / "retail" / sql.name)


def generate(n: int, out: Path, seed: int) -> dict:
    started = time.perf_counter()
    if out == REPO or (out / "Cargo.toml").exists():
        sys.exit(f"refusing to generate into {out}: it looks like the repository itself")
    out.mkdir(parents=True, exist_ok=True)
    done = out / ".done"
    if done.exists():
        done.unlink()
    data = out / "sample-data" / "retail"
    if data.exists():  # never mix files of an earlier size into the globs
        shutil.rmtree(data)
    copy_project(out)

    rng = random.Random(seed)
    n_customers = max(1000, n // 50)
    n_web = round(n * WEB_SHARE)
    n_pos = n - n_web

    customers = write_customers(data, n_customers, rng)
    maker = OrderMaker(rng, n_customers)
    pos = write_pos(data, maker, n_pos, rng)
    web = write_web(data, maker, n_web, rng)

    files = pos + web + [customers]
    info = {
        "n": n,
        "seed": seed,
        "version": VERSION,
        "flat": FLAT,
        "web_share": WEB_SHARE,
        "malformed": MALFORMED,
        "orders": maker.next_id - 1,
        "pos_orders": n_pos,
        "web_orders": n_web,
        "order_lines": maker.lines,
        "customers": n_customers,
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "seconds": round(time.perf_counter() - started, 2),
    }
    done.write_text(json.dumps(info, indent=1) + "\n")
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, help="number of distinct orders")
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--flat", action="store_true",
                    help="the same order volume every month (no November/December peak)")
    ap.add_argument("--web-share", type=float, default=0.2,
                    help="share of the orders written as web JSON Lines (default 0.2)")
    ap.add_argument("--malformed", type=float, default=0.001,
                    help="share of the orders written as a malformed line (default 0.001; "
                         "another rate adds two kinds of malformed line to the three)")
    args = ap.parse_args()
    global FLAT, WEB_SHARE
    FLAT = args.flat
    WEB_SHARE = args.web_share
    set_malformed(args.malformed)
    if args.n < 1:
        sys.exit("N must be positive")
    info = generate(args.n, args.out_dir.resolve(), args.seed)
    print(
        f"generated {info['orders']} orders ({info['pos_orders']} POS, {info['web_orders']} web; "
        f"{info['order_lines']} data lines incl. dirt), {info['customers']} customers, "
        f"{info['files']} files, {info['bytes']} bytes ({info['bytes'] / 2**20:.1f} MiB) "
        f"in {info['seconds']:.2f}s -> {args.out_dir}"
    )


if __name__ == "__main__":
    main()
