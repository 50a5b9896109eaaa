# Shared by pyiceberg.py and spark.py (icereader prepends it): a type
# descriptor per column, from Arrow's or Spark's type, and the encoding of a
# value by its descriptor into JSON that keeps what JSON would lose.
# Descriptor kinds: bool int8 int16 int32 int64 float32 float64 decimal(p, s)
# string uuid binary date time timestamp (no zone) timestamptz (UTC)
# struct(f) list(e) map(key, value) other(name). Encoding: null as null;
# NaN and infinities as "NaN", "Infinity", "-Infinity"; decimals as plain
# strings; binary as base64; uuid as its string; date as days and time as
# microseconds since midnight; timestamps as microseconds since the epoch;
# structs as objects; lists as arrays; maps as arrays of [key, value].
import base64, datetime, decimal, json, math, os, sys, time, uuid

os.environ["TZ"] = "UTC"
time.tzset()

EPOCH = datetime.datetime(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
EPOCH_DATE = datetime.date(1970, 1, 1)
MICRO = datetime.timedelta(microseconds=1)


def arrow_desc(t):
    import pyarrow as pa
    T = pa.types
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return {"k": "uuid"}
        return arrow_desc(t.storage_type)
    simple = [(T.is_boolean, "bool"), (T.is_int8, "int8"), (T.is_int16, "int16"), (T.is_int32, "int32"),
              (T.is_int64, "int64"), (T.is_float32, "float32"), (T.is_float64, "float64"),
              (T.is_date32, "date"), (T.is_time64, "time")]
    for test, kind in simple:
        if test(t):
            return {"k": kind}
    if T.is_decimal(t):
        return {"k": "decimal", "p": t.precision, "s": t.scale}
    if T.is_string(t) or T.is_large_string(t) or T.is_string_view(t):
        return {"k": "string"}
    if T.is_binary(t) or T.is_large_binary(t) or T.is_fixed_size_binary(t) or T.is_binary_view(t):
        return {"k": "binary"}
    if T.is_timestamp(t):
        if t.unit != "us":
            return {"k": "other", "name": str(t)}
        return {"k": "timestamptz" if t.tz else "timestamp"}
    if T.is_struct(t):
        return {"k": "struct", "f": [{"n": t.field(i).name, "t": arrow_desc(t.field(i).type)} for i in range(t.num_fields)]}
    if T.is_map(t):
        return {"k": "map", "key": arrow_desc(t.key_type), "value": arrow_desc(t.item_type)}
    if T.is_list(t) or T.is_large_list(t) or T.is_fixed_size_list(t):
        return {"k": "list", "e": arrow_desc(t.value_type)}
    return {"k": "other", "name": str(t)}


SPARK_SIMPLE = {"BooleanType": "bool", "ByteType": "int8", "ShortType": "int16", "IntegerType": "int32",
                "LongType": "int64", "FloatType": "float32", "DoubleType": "float64", "StringType": "string",
                "VarcharType": "string", "CharType": "string", "BinaryType": "binary", "DateType": "date",
                "TimestampType": "timestamptz", "TimestampNTZType": "timestamp"}


def spark_desc(t):
    name = type(t).__name__
    if name in SPARK_SIMPLE:
        return {"k": SPARK_SIMPLE[name]}
    if name == "DecimalType":
        return {"k": "decimal", "p": t.precision, "s": t.scale}
    if name == "StructType":
        return {"k": "struct", "f": [{"n": f.name, "t": spark_desc(f.dataType)} for f in t.fields]}
    if name == "ArrayType":
        return {"k": "list", "e": spark_desc(t.elementType)}
    if name == "MapType":
        return {"k": "map", "key": spark_desc(t.keyType), "value": spark_desc(t.valueType)}
    return {"k": "other", "name": t.simpleString()}


def encode(d, v):
    if v is None:
        return None
    k = d["k"]
    if k == "bool":
        return bool(v)
    if k in ("int8", "int16", "int32", "int64"):
        return int(v)
    if k in ("float32", "float64"):
        v = float(v)
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if k == "decimal":
        return format(decimal.Decimal(v), "f")
    if k == "string":
        return str(v)
    if k == "binary":
        return base64.b64encode(bytes(v)).decode("ascii")
    if k == "uuid":
        return str(v if isinstance(v, uuid.UUID) else uuid.UUID(bytes=bytes(v)))
    if k == "date":
        return (v - EPOCH_DATE).days
    if k == "time":
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000000 + v.microsecond
    if k in ("timestamp", "timestamptz"):
        if v.tzinfo is not None:
            return (v - EPOCH_UTC) // MICRO
        return (v - EPOCH) // MICRO
    if k == "struct":
        if not isinstance(v, dict):
            v = v.asDict(recursive=False)
        return {f["n"]: encode(f["t"], v.get(f["n"])) for f in d["f"]}
    if k == "list":
        return [encode(d["e"], x) for x in v]
    if k == "map":
        items = v.items() if isinstance(v, dict) else v
        return [[encode(d["key"], a), encode(d["value"], b)] for a, b in items]
    return str(v)


def dumps(x):
    return json.dumps(x, allow_nan=False, separators=(",", ":"))
