#!/usr/bin/env python3
"""A scripted agent: answers questions about a project's lake through `pipeline mcp`, with the
official MCP Python SDK, from tool results alone (no file of the project is read, no SQL is
known in advance beyond what the tools say).

    python3 tests/mcp/agent.py QUESTION[,QUESTION...] -- COMMAND [ARGS...]

QUESTIONs: feeds (which tables feed gold.customer_metrics.total_spend), drop (why March
revenue dropped after the newest run), failed (which check failed last, on which rows),
rename (what renaming silver.orders.amount breaks: the SQL on disk already renames it),
backfill (what a February backfill would replace), wrong_snapshot (the error for an as_of no
table has). Prints {"answers": {QUESTION: ...},
"calls": N, "tools": [...]} as JSON. Used by tests/it/mcp_agent.rs, which checks each answer
against facts computed by hand.
"""

import asyncio
import json
import sys
from decimal import Decimal

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client


class Agent:
    def __init__(self, session):
        self.session = session
        self.calls = 0
        self.structured = 0

    async def call(self, tool, **arguments):
        """A tool's answer as data: its structured content, else its JSON text."""
        self.calls += 1
        result = await self.session.call_tool(tool, arguments)
        text = "".join(c.text for c in result.content if c.type == "text")
        if result.is_error:
            raise RuntimeError(f"{tool}: {text}")
        if result.structured_content is not None:
            self.structured += 1
            return result.structured_content
        return json.loads(text)

    async def rows(self, sql, as_of=None):
        """A query's rows as dicts, by the columns the result names."""
        args = {"sql": sql} | ({"as_of": as_of} if as_of else {})
        result = await self.call("query", **args)
        names = [c["name"] for c in result["columns"]]
        return [dict(zip(names, row)) for row in result["rows"]], result["columns"]

    async def pipeline(self):
        pipelines = await self.call("list_pipelines")
        assert len(pipelines) == 1, pipelines
        return pipelines[0]["pipeline"]

    async def feeds(self):
        """Every table on the way from gold.customer_metrics.total_spend to the sources."""
        tree = await self.call("lineage", target="gold.customer_metrics.total_spend")
        tables, sources = set(), set()

        def walk(node):
            if isinstance(node, dict):
                for key in ("column", "target", "name"):
                    value = node.get(key)
                    if isinstance(value, str) and value.count(".") >= 2:
                        tables.add(".".join(value.split(".")[:2]))
                if node.get("kind") == "source":
                    sources.update(node.get("paths", []))
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(tree)
        tables.discard("gold.customer_metrics")
        return {"tables": sorted(tables), "sources": sorted(sources)}

    async def drop(self):
        """The newest run changed March revenue: by how much, from which file, which orders,
        and why the table counts them so."""
        pipeline = await self.pipeline()
        runs = (await self.call("list_runs", pipeline=pipeline, limit=1))["runs_newest_first"]
        run_id = runs[0]["run_id"]
        receipt = await self.call("run_receipt", run_id=run_id)
        revenue = next(t for t in receipt["tables"] if t["table"] == "gold.monthly_revenue")
        march = "SELECT revenue FROM gold.monthly_revenue WHERE month = DATE '2026-03-01'"
        before, _ = await self.rows(march, as_of=revenue["snapshot_before"])
        after, columns = await self.rows(march)
        files, _ = await self.rows(
            f"SELECT DISTINCT _source_file FROM bronze.pos_orders WHERE _run_id = '{run_id}' "
            f"UNION SELECT DISTINCT _source_file FROM bronze.web_orders WHERE _run_id = '{run_id}'"
        )
        orders, _ = await self.rows(
            "SELECT order_id, status, amount FROM silver.orders WHERE order_id IN "
            f"(SELECT order_id FROM bronze.pos_orders WHERE _run_id = '{run_id}' UNION "
            f"SELECT order_id FROM bronze.web_orders WHERE _run_id = '{run_id}') ORDER BY order_id"
        )
        described = await self.call("describe_table", table="gold.monthly_revenue")
        context = described["context"]
        return {
            "run_id": run_id,
            "partitions": revenue.get("partitions"),
            "before": str(before[0]["revenue"]),
            "after": str(after[0]["revenue"]),
            "drop": str(Decimal(str(before[0]["revenue"])) - Decimal(str(after[0]["revenue"]))),
            "revenue_type": next(c["type"] for c in columns if c["name"] == "revenue"),
            "late_files": sorted(f["_source_file"] for f in files),
            "orders": orders,
            "description": context["description"],
            "sql_filters_cancelled": "cancelled" in (context["written_by"]["sql"] or ""),
            "upstream": context["upstream"],
        }

    async def failed(self):
        """The newest failed check: its name, table, violations and sample rows."""
        quality = await self.call("quality")
        failed = [r for r in quality["results"] if not r["passed"]]
        first = failed[0]
        described = await self.call("describe_table", table=first["table"])
        expectation = next(
            e for e in described["context"]["expectations"] if e["name"] == first["name"]
        )
        return {
            "run_id": quality["run_id"],
            "name": first["name"],
            "table": first["table"],
            "check": first["check"],
            "violations": first["violations"],
            "sample": first.get("sample", []),
            "defined_at": expectation["defined_at"],
            "last_result_run": expectation["last_result"]["run_id"],
        }

    async def rename(self):
        """What the SQL on disk (silver.orders.amount renamed) would break."""
        pipeline = await self.pipeline()
        plan = await self.call("plan", pipeline=pipeline)
        orders = next(t for t in plan["tables"] if t["table"] == "silver.orders")
        change = next(c for c in orders["changes"] if c.get("from") == "amount")
        breaks = change["breaks"]
        return {
            "change": change["change"],
            "to": change.get("to"),
            "breaking": change["breaking"],
            "tables": sorted({b["table"] for b in breaks if b["kind"] == "sql"}),
            "columns": sorted({b["column"] for b in breaks if b["kind"] == "column"}),
            "readers": sorted({(b["name"], b["owner"]) for b in breaks if b["kind"] == "reader"}),
        }

    async def wrong_snapshot(self):
        """What the server says of a snapshot id no table has."""
        try:
            await self.call("query", sql="SELECT count(*) FROM silver.orders", as_of="1")
        except RuntimeError as e:
            return str(e)
        return None

    async def backfill(self):
        """What recomputing February would replace, per table."""
        pipeline = await self.pipeline()
        plan = await self.call(
            "backfill_plan", pipeline=pipeline, **{"from": "2026-02-01", "to": "2026-02-28"}
        )
        return {t["table"]: t["action"] for t in plan}


async def main():
    split = sys.argv.index("--")
    questions = sys.argv[1].split(",")
    command, args = sys.argv[split + 1], sys.argv[split + 2 :]
    params = StdioServerParameters(command=command, args=args, env=get_default_environment())
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, client_info=types.Implementation(name="pipeline-agent", version="1.0")
        ) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            tools = [t.name for t in listed]
            schemas = {t.name: t.output_schema for t in listed if t.output_schema}
            agent = Agent(session)
            answers = {q: await getattr(agent, q)() for q in questions}
    print(
        json.dumps(
            {
                "answers": answers,
                "calls": agent.calls,
                "structured": agent.structured,
                "tools": tools,
                "output_schemas": schemas,
            },
            default=str,
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
