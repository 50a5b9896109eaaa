"""Reads an Iceberg table with pyiceberg and prints its rows and schema as JSON.

argv[1] is a JSON object: type (sql or hive), name, uri, warehouse, table.
Values are made comparable: bytes as hex, decimals as plain strings,
timestamps as %Y-%m-%dT%H:%M:%S.%f (Z when zoned), maps as objects.
"""
import datetime
import decimal
import json
import sys

args = json.loads(sys.argv[1])
if args["type"] == "sql":
    from pyiceberg.catalog.sql import SqlCatalog
    cat = SqlCatalog(args["name"], uri="sqlite:///" + args["uri"], warehouse=args["warehouse"])
else:
    from pyiceberg.catalog.hive import HiveCatalog
    cat = HiveCatalog(args["name"], uri=args["uri"])
t = cat.load_table(args["table"])


def canon(v):
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%S.%f") + ("Z" if v.tzinfo else "")
    if isinstance(v, datetime.time):
        return v.strftime("%H:%M:%S.%f")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return {k: canon(x) for k, x in v}
        return [canon(x) for x in v]
    return v


rows = [canon(r) for r in t.scan().to_arrow().to_pylist()]
ids = {f.name: f.field_id for f in t.schema().fields}
print(json.dumps({"rows": rows, "ids": ids, "files": len(list(t.scan().plan_files()))}))
