# pyiceberg.py: runs the requests of the JSON on stdin, {"catalog": {...},
# "requests": [...]}, against one pyiceberg catalog and prints "ROWS " and a
# JSON list of their results. Requests: {"op": "scan", "table", "snapshot_id",
# "filter", "columns"} gives {"schema", "rows"} (rows as arrays in schema
# order, encoded by encode.py); {"op": "metadata", "table"} gives the table's
# metadata as the Iceberg spec's JSON plus "metadata-location"; {"op":
# "script", "code", "input"} runs code with catalog and input bound and
# returns what it puts in result.
from pyiceberg.expressions import AlwaysTrue

inp = json.load(sys.stdin)
c = inp["catalog"]
props = dict(c.get("properties") or {})
if c["type"] == "sql":
    from pyiceberg.catalog.sql import SqlCatalog
    catalog = SqlCatalog(c["name"], uri="sqlite:///" + c["path"], warehouse=c["warehouse"], **props)
else:
    from pyiceberg.catalog.hive import HiveCatalog
    catalog = HiveCatalog(c["name"], uri=c["uri"], warehouse=c["warehouse"], **props)


def scan(req):
    tbl = catalog.load_table(req["table"])
    kw = {"row_filter": req.get("filter") or AlwaysTrue()}
    if req.get("columns"):
        kw["selected_fields"] = tuple(req["columns"])
    if req.get("snapshot_id"):
        kw["snapshot_id"] = req["snapshot_id"]
    at = tbl.scan(**kw).to_arrow()
    descs = [{"n": f.name, "t": arrow_desc(f.type)} for f in at.schema]
    rows = [[encode(d["t"], r[d["n"]]) for d in descs] for r in at.to_pylist()]
    return {"schema": descs, "rows": rows}


def metadata(req):
    tbl = catalog.load_table(req["table"])
    md = json.loads(tbl.metadata.model_dump_json())
    md["metadata-location"] = tbl.metadata_location
    return md


def script(req):
    env = {"catalog": catalog, "input": req.get("input"), "result": None}
    exec(req["code"], env)
    return env["result"]


ops = {"scan": scan, "metadata": metadata, "script": script}
print("ROWS " + dumps([ops[r["op"]](r) for r in inp["requests"]]))
