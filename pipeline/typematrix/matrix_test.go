package typematrix

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/tailtest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/jobs/tables"
	"github.com/tributary/tributary/loader"
)

// fieldsV1 are the value schema's fields: every Avro type and logical
// type the registry accepts, nested records, arrays and maps of records,
// a union with null and one of several types.
const fieldsV1 = `
 {"name": "id", "type": "long"},
 {"name": "b", "type": "boolean"},
 {"name": "i", "type": "int"},
 {"name": "l", "type": "long"},
 {"name": "f", "type": "float"},
 {"name": "d", "type": "double"},
 {"name": "s", "type": "string"},
 {"name": "by", "type": "bytes"},
 {"name": "fx", "type": {"type": "fixed", "name": "Fx", "size": 4}},
 {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
 {"name": "dec_b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
 {"name": "dec_f", "type": {"type": "fixed", "name": "Dec16", "size": 16, "logicalType": "decimal", "precision": 38, "scale": 6}},
 {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
 {"name": "dt", "type": {"type": "int", "logicalType": "date"}},
 {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
 {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
 {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
 {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
 {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
 {"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
 {"name": "opt", "type": ["null", "string"], "default": null},
 {"name": "multi", "type": ["null", "string", "long"], "default": null},
 {"name": "rec", "type": {"type": "record", "name": "Inner", "fields": [
   {"name": "a", "type": "int"},
   {"name": "deep", "type": ["null", {"type": "record", "name": "Deep", "fields": [{"name": "x", "type": "double"}]}], "default": null}]}},
 {"name": "arr", "type": {"type": "array", "items": "long"}},
 {"name": "arr_rec", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
   {"name": "k", "type": "string"}, {"name": "v", "type": ["null", "long"], "default": null}]}}},
 {"name": "mp", "type": {"type": "map", "values": "double"}},
 {"name": "mp_rec", "type": {"type": "map", "values": "Item"}}`

const (
	schemaV1 = `{"type": "record", "name": "Row", "namespace": "typematrix", "fields": [` + fieldsV1 + `]}`
	// schemaV2 adds fields with defaults.
	schemaV2 = `{"type": "record", "name": "Row", "namespace": "typematrix", "fields": [` + fieldsV1 + `,
 {"name": "added_n", "type": ["null", "long"], "default": null},
 {"name": "added_s", "type": "string", "default": "dflt"}]}`
)

// Records per hour; hours 0 and 1 are written with v1, 2 and 3 with v2.
const perHour = 800

var hour0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// Topics, one table each: never compacted, all compacted, hours 0-1 compacted.
var topics = []string{"matrix_avro", "matrix_parquet", "matrix_mixed"}

// gen makes record n of hour h (v2: with the added fields) in goavro's
// native form; the first records of each hour are the edge values.
func gen(rng *rand.Rand, h, n int, v2 bool) map[string]any {
	id := int64(h*perHour + n)
	edge := func(vals ...any) any { return vals[n%len(vals)] }
	isEdge := n < 12
	ts := func(unit time.Duration) time.Time {
		if isEdge {
			return edge(time.Date(1900, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 999000000, time.UTC),
				time.Unix(0, 0).UTC(), time.Date(2038, 1, 19, 3, 14, 8, 0, time.UTC), time.Date(2199, 12, 31, 23, 59, 59, 999000000, time.UTC)).(time.Time).Truncate(unit)
		}
		return time.Unix(rng.Int64N(7_000_000_000)-2_000_000_000, rng.Int64N(1e9)).UTC().Truncate(unit)
	}
	str := func() string {
		if isEdge {
			return edge("", "ünïcødé ✓ 日本語 🎉", "quote\"back\\slash\nnewline", strings.Repeat("x", 300)).(string)
		}
		return fmt.Sprintf("s-%d-%x", id, rng.Uint32())
	}
	by := []byte{}
	if !isEdge || n%2 == 1 {
		by = []byte(fmt.Sprintf("\x00\xff%d", rng.Uint32()))
	}
	dec := func(max int64) *big.Rat {
		if isEdge {
			return big.NewRat(edge(-max, max, int64(0), int64(-1), int64(1)).(int64), 100)
		}
		return big.NewRat(rng.Int64N(2*max)-max, 100)
	}
	decF := new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil)
	decF.Sub(decF, big.NewInt(1))
	if n%3 == 1 {
		decF.Neg(decF)
	} else if !isEdge {
		decF.SetInt64(rng.Int64() - math.MaxInt64/2)
	}
	f := float32(rng.NormFloat64() * 1e6)
	d := rng.NormFloat64() * 1e12
	if isEdge {
		f = edge(float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.MaxFloat32), float32(-0.0), float32(math.SmallestNonzeroFloat32)).(float32)
		d = edge(math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.Copysign(0, -1), math.SmallestNonzeroFloat64).(float64)
	}
	i := rng.Int32()
	l := rng.Int64()
	if isEdge {
		i = edge(int32(math.MinInt32), int32(math.MaxInt32), int32(0), int32(-1)).(int32)
		l = edge(int64(math.MinInt64), int64(math.MaxInt64), int64(0), int64(-1)).(int64)
	}
	rec := map[string]any{
		"id": id, "b": n%2 == 0, "i": i, "l": l, "f": f, "d": d, "s": str(), "by": by,
		"fx": []byte{byte(n), 0, 0xff, byte(h)}, "e": []string{"RED", "GREEN", "BLUE"}[n%3],
		"dec_b": dec(99999999_99), "dec_f": new(big.Rat).SetFrac(decF, big.NewInt(1_000_000)),
		"u":  fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), id),
		"dt": ts(24 * time.Hour), "tm": time.Duration(rng.Int64N(86_400_000)) * time.Millisecond,
		"tu":  time.Duration(rng.Int64N(86_400_000_000)) * time.Microsecond,
		"tsm": ts(time.Millisecond), "tsu": ts(time.Microsecond),
		"ltm": ts(time.Millisecond).UnixMilli(), "ltu": ts(time.Microsecond).UnixMicro(),
		"opt": nil, "multi": nil,
		"rec":     map[string]any{"a": int32(n), "deep": nil},
		"arr":     []any{},
		"arr_rec": []any{},
		"mp":      map[string]any{},
		"mp_rec":  map[string]any{},
	}
	if isEdge && n%4 == 3 {
		rec["tm"], rec["tu"] = 86_399_999*time.Millisecond, 86_399_999_999*time.Microsecond
	}
	switch n % 3 {
	case 0:
		rec["opt"] = goavro.Union("string", str())
		rec["multi"] = goavro.Union("string", str())
		rec["rec"].(map[string]any)["deep"] = goavro.Union("typematrix.Deep", map[string]any{"x": d})
		rec["arr"] = []any{l, int64(0), int64(-7)}
		rec["arr_rec"] = []any{map[string]any{"k": "a", "v": goavro.Union("long", l)}, map[string]any{"k": "", "v": nil}}
		rec["mp"] = map[string]any{"k": d, "ü": 1.5}
		rec["mp_rec"] = map[string]any{"x": map[string]any{"k": "in", "v": nil}}
	case 1:
		rec["multi"] = goavro.Union("long", l)
	}
	if v2 {
		rec["added_n"] = nil
		if n%2 == 0 {
			rec["added_n"] = goavro.Union("long", id*3)
		}
		rec["added_s"] = fmt.Sprintf("added %d", id)
	}
	return rec
}

// desc is a type as both sides canonicalise it (see norm in the scripts).
type desc struct {
	K       string   `json:"k"`
	Scale   int      `json:"scale,omitempty"`
	Fields  [][2]any `json:"f,omitempty"` // [name, *desc]
	Items   *desc    `json:"items,omitempty"`
	Members []*desc  `json:"members,omitempty"`
}

// describe maps the top-level fields of schema to their descs.
func describe(t *testing.T, schema string) [][2]any {
	var doc map[string]any
	if err := json.Unmarshal([]byte(schema), &doc); err != nil {
		t.Fatal(err)
	}
	named := map[string]any{}
	var walk func(s any) *desc
	walk = func(s any) *desc {
		switch s := s.(type) {
		case []any:
			var ms []*desc
			for _, b := range s {
				if b != "null" {
					ms = append(ms, walk(b))
				}
			}
			if len(ms) == 1 {
				return ms[0]
			}
			return &desc{K: "union", Members: ms}
		case string:
			if d, ok := named["typematrix."+s]; ok {
				return walk(d)
			}
			if d, ok := named[s]; ok {
				return walk(d)
			}
			return &desc{K: map[string]string{"boolean": "bool", "int": "int", "long": "int", "float": "float",
				"double": "double", "string": "string", "bytes": "bytes"}[s]}
		case map[string]any:
			if name, ok := s["name"].(string); ok {
				named["typematrix."+name] = s
			}
			if lt, ok := s["logicalType"].(string); ok {
				switch lt {
				case "decimal":
					return &desc{K: "decimal", Scale: int(s["scale"].(float64))}
				case "uuid":
					return &desc{K: "string"}
				}
				return &desc{K: lt}
			}
			switch s["type"] {
			case "record":
				d := &desc{K: "record"}
				for _, f := range s["fields"].([]any) {
					fd := f.(map[string]any)
					d.Fields = append(d.Fields, [2]any{fd["name"], walk(fd["type"])})
				}
				return d
			case "array":
				return &desc{K: "array", Items: walk(s["items"])}
			case "map":
				return &desc{K: "map", Items: walk(s["values"])}
			case "enum":
				return &desc{K: "string"}
			case "fixed":
				return &desc{K: "bytes"}
			}
			return walk(s["type"])
		}
		t.Fatalf("describe %v", s)
		return nil
	}
	return walk(doc).Fields
}

// canon is a produced value as the readers' values are canonicalised: every
// scalar a string (floats by their bits, decimals unscaled, dates in days,
// times and timestamps in microseconds), maps as sorted [key, value] pairs,
// a union of several types as [member index, value].
func canon(d *desc, v any) any {
	if v == nil {
		return nil
	}
	if m, ok := v.(map[string]any); ok && d.K != "map" && len(m) == 1 && (d.K != "record" || !hasField(d, m)) {
		for k, x := range m { // a union with null's branch
			if d.K == "union" {
				idx := map[string]int{"string": 0, "long": 1}[k]
				return []any{idx, canon(d.Members[idx], x)}
			}
			return canon(d, x)
		}
	}
	switch d.K {
	case "bool":
		return strconv.FormatBool(v.(bool))
	case "int":
		switch x := v.(type) {
		case int32:
			return strconv.FormatInt(int64(x), 10)
		case int64:
			return strconv.FormatInt(x, 10)
		}
	case "float":
		x := v.(float32)
		if x != x {
			return "NaN"
		}
		return strconv.FormatUint(uint64(math.Float32bits(x)), 10)
	case "double":
		x := v.(float64)
		if x != x {
			return "NaN"
		}
		return strconv.FormatUint(math.Float64bits(x), 10)
	case "string":
		return v.(string)
	case "bytes":
		return hex.EncodeToString(v.([]byte))
	case "decimal":
		r := v.(*big.Rat)
		n := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
		return n.Quo(n, r.Denom()).String()
	case "date":
		return strconv.FormatInt(int64(math.Floor(float64(v.(time.Time).Unix())/86400)), 10)
	case "time-millis", "time-micros":
		return strconv.FormatInt(int64(v.(time.Duration)/time.Microsecond), 10)
	case "timestamp-millis", "timestamp-micros":
		return strconv.FormatInt(v.(time.Time).UnixMicro(), 10)
	case "local-timestamp-millis":
		return strconv.FormatInt(v.(int64)*1000, 10)
	case "local-timestamp-micros":
		return strconv.FormatInt(v.(int64), 10)
	case "record":
		m := v.(map[string]any)
		out := map[string]any{}
		for _, f := range d.Fields {
			out[f[0].(string)] = canon(f[1].(*desc), m[f[0].(string)])
		}
		return out
	case "array":
		out := []any{}
		for _, x := range v.([]any) {
			out = append(out, canon(d.Items, x))
		}
		return out
	case "map":
		m := v.(map[string]any)
		out := []any{}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		}) {
			out = append(out, []any{k, canon(d.Items, m[k])})
		}
		return out
	}
	panic(fmt.Sprintf("canon %s %T", d.K, v))
}

// hasField reports whether the one key of m is a field of record d (else
// m is a union's branch holding the record).
func hasField(d *desc, m map[string]any) bool {
	for _, f := range d.Fields {
		if _, ok := m[f[0].(string)]; ok {
			return true
		}
	}
	return false
}

// normScript canonicalises a reader's values as canon does, by the descs
// of the columns (inp["desc"]).
const normScript = `
import datetime, decimal, math, struct, os, time
os.environ["TZ"] = "UTC"
time.tzset()
EPOCH = datetime.datetime(1970, 1, 1)
def micros(v):
    if type(v).__name__ == "Timestamp":  # pandas
        return v.value // 1000
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        d = v - EPOCH
        return (d.days * 86400 + d.seconds) * 1000000 + d.microseconds
    return int(v)
def norm(d, v):
    if v is None:
        return None
    k = d["k"]
    if hasattr(v, "asDict"):
        v = v.asDict(recursive=True)
    if k == "bool":
        return "true" if v else "false"
    if k == "int":
        return str(int(v))
    if k in ("float", "double"):
        v = float(v)
        if math.isnan(v):
            return "NaN"
        return str(struct.unpack("<I", struct.pack("<f", v))[0] if k == "float" else struct.unpack("<Q", struct.pack("<d", v))[0])
    if k == "string":
        return v if isinstance(v, str) else v.decode() if isinstance(v, (bytes, bytearray)) else str(v)
    if k == "bytes":
        return bytes(v).hex()
    if k == "decimal":
        if isinstance(v, (bytes, bytearray)):  # Hive 2.3's AvroSerDe: a decimal of fixed is binary
            return str(int.from_bytes(v, "big", signed=True))
        with decimal.localcontext() as ctx:
            ctx.prec = 100
            return str(int(decimal.Decimal(v).scaleb(d["scale"])))
    if k == "date":
        if isinstance(v, datetime.date):
            return str((v - datetime.date(1970, 1, 1)).days)
        return str(int(v))
    if k in ("time-millis", "time-micros"):
        if isinstance(v, datetime.time):
            return str(((v.hour * 60 + v.minute) * 60 + v.second) * 1000000 + v.microsecond)
        if isinstance(v, datetime.timedelta):
            return str(v // datetime.timedelta(microseconds=1))
        return str(int(v) * (1000 if k == "time-millis" else 1))
    if k.endswith("timestamp-millis") or k.endswith("timestamp-micros"):
        if isinstance(v, int):
            return str(v * (1000 if k.endswith("millis") else 1))
        return str(micros(v))
    if k == "record":
        return {name: norm(fd, v.get(name)) for name, fd in d["f"]}
    if k == "array":
        return [norm(d["items"], x) for x in v]
    if k == "map":
        items = v.items() if isinstance(v, dict) else v
        return sorted([[str(a), norm(d["items"], b)] for a, b in items], key=lambda p: p[0])
    if k == "union":
        if isinstance(v, dict):
            for i in range(len(d["members"])):
                if v.get("member%d" % i) is not None:
                    return [i, norm(d["members"][i], v["member%d" % i])]
            return None
        i = 0 if isinstance(v, str) else 1
        return [i, norm(d["members"][i], v)]
    raise Exception("norm %s %r" % (k, v))
def norm_row(descs, r):
    return {name: norm(fd, r.get(name)) for name, fd in descs if name in r}
`

// filesScript reads the Avro files with fastavro and the Parquet files
// with pyarrow and DuckDB, each row canonicalised.
const filesScript = normScript + `
import json, sys, fastavro, pyarrow.parquet as pq, duckdb
inp = json.load(sys.stdin)
out = {"fastavro": [], "pyarrow": [], "duckdb": [], "duckdb_types": {}, "pyarrow_types": {}}
for p in inp["avro"]:
    with open(p, "rb") as f:
        out["fastavro"] += [norm_row(inp["desc"], r) for r in fastavro.reader(f)]
for p in inp["parquet"]:
    t = pq.read_table(p)
    out["pyarrow_types"].update({f.name: str(f.type) for f in t.schema})
    out["pyarrow"] += [norm_row(inp["desc"], r) for r in t.to_pylist()]
    cur = duckdb.sql("SELECT * FROM read_parquet('%s')" % p)
    out["duckdb_types"].update({c: str(ty) for c, ty in zip(cur.columns, cur.types)})
    cols = cur.columns
    out["duckdb"] += [norm_row(inp["desc"], dict(zip(cols, r))) for r in cur.fetchall()]
print("ROWS " + json.dumps(out))
`

// sparkScript runs, per table, SELECT *, count(*), a count over a
// timestamp range and count(column) of every column, and reads the
// compacted files with Spark's own Parquet reader.
const sparkScript = normScript + `
out = {"version": spark.version, "tables": {}, "native": [], "native_types": {}}
descs = inp["desc"]
for table in inp["tables"]:
    res = {}
    df = spark.sql("SELECT * FROM " + table)
    res["types"] = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    res["rows"] = [dict(norm_row(descs, r.asDict()), hour=r["hour"]) for r in df.collect()]
    res["count"] = spark.sql("SELECT count(*) AS n FROM " + table).collect()[0]["n"]
    res["range"] = spark.sql("SELECT count(*) AS n FROM %s WHERE tsm >= timestamp'%s' AND tsm < timestamp'%s'" % (table, inp["from"], inp["to"])).collect()[0]["n"]
    cols = [c for c, _ in descs if c in res["types"]]
    row = spark.sql("SELECT " + ", ".join("count(%s) AS %s" % (c, c) for c in cols) + " FROM " + table).collect()[0]
    res["counts"] = row.asDict()
    out["tables"][table] = res
for p in inp["parquet"]:
    df = spark.read.parquet(p)
    out["native_types"].update({f.name: f.dataType.simpleString() for f in df.schema.fields})
    out["native"] += [norm_row(descs, r.asDict()) for r in df.collect()]
spark.stop()
print("ROWS " + json.dumps(out))
`

// TestTypeMatrix: see the package doc.
func TestTypeMatrix(t *testing.T) {
	began := time.Now()
	uri := testenv.HiveMetastore(t)
	spark4 := testenv.Spark4Python(t)
	tail := tailtest.Start(t, tailtest.Config{Topics: topics, Partitions: 2, Prefix: "typematrix"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// Produce: the same records to each topic, two partitions, hours 0-3.
	rng := rand.New(rand.NewPCG(40, 1))
	produced := map[int64]map[string]any{} // id -> record
	hourOf := map[int64]int{}
	var recs []*kgo.Record
	for h := 0; h < 4; h++ {
		schema := schemaV1
		if h >= 2 {
			schema = schemaV2
		}
		for n := 0; n < perHour; n++ {
			rec := gen(rng, h, n, h >= 2)
			id := rec["id"].(int64)
			produced[id], hourOf[id] = rec, h
			for _, topic := range topics {
				v, err := tail.Serializer.Encode(ctx, topic+"-value", schema, rec)
				if err != nil {
					t.Fatalf("encode record %d: %v", id, err)
				}
				recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(n % 2), Value: v,
					Timestamp: hour0.Add(time.Duration(h)*time.Hour + time.Duration(n)*time.Second)})
			}
		}
	}
	if err := tail.Kafka.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Load: the loader, as a user runs it, into HDFS.
	cfg, unknown, err := loader.ConfigFromProperties(map[string]string{"name": "typematrix",
		"bootstrap.servers": strings.Join(tail.Cluster.Bootstrap(), ","), "schema.registry.url": tail.Cluster.RegistryURL(),
		"topics": strings.Join(topics, "|"), "output.uri": tail.BaseURI, "audit.enable": "false"})
	if err != nil || len(unknown) > 0 {
		t.Fatalf("loader config: %v (unknown %v)", err, unknown)
	}
	l, err := loader.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(ctx)
	l.Close()
	if err != nil || sum.Records != int64(len(recs)) {
		t.Fatalf("loader: %+v, %v; want %d records", sum, err, len(recs))
	}
	t.Logf("produced and loaded %d records in %v", len(recs), time.Since(began))

	// Compact: every hour of matrix_parquet, hours 0-1 of matrix_mixed.
	for topic, through := range map[string]int{"matrix_parquet": 4, "matrix_mixed": 2} {
		end := hour0.Add(time.Duration(through) * time.Hour)
		c, err := compact.New(compact.Config{FS: tail.FS, Base: tail.Base, Topics: []string{topic}, Delay: time.Nanosecond,
			ClosedThrough: func(context.Context) (time.Time, error) { return end.Add(time.Nanosecond), nil }})
		if err != nil {
			t.Fatal(err)
		}
		if s, err := c.Run(ctx); err != nil || s.HoursCompacted != through {
			t.Fatalf("compact %s: %+v, %v", topic, s, err)
		}
	}

	// Register every hour of each topic, at its location and format.
	db := fmt.Sprintf("typematrix_%d", time.Now().UnixNano())
	m, err := tables.New(tables.Config{URIs: []string{uri}, Database: db}, tail.Registry, tables.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ids := map[int]int{}
	for _, v := range []struct {
		h      int
		schema string
	}{{0, schemaV1}, {2, schemaV2}} {
		if ids[v.h], err = tail.Registry.Register(ctx, topics[0]+"-value", v.schema); err != nil {
			t.Fatal(err)
		}
	}
	hdfsURI := "hdfs://" + testenv.HDFS(t)
	local := t.TempDir()
	files := map[string]map[hours.Format][]string{} // topic -> format -> local copies
	for _, topic := range topics {
		files[topic] = map[hours.Format][]string{}
		var want []tables.Partition
		for h := 0; h < 4; h++ {
			start := hour0.Add(time.Duration(h) * time.Hour)
			data, err := hours.HourData(tail.FS, hours.Hour{Topic: topic, Start: start, Dir: hours.Dir(tail.Base, topic, start)})
			if err != nil || len(data) == 0 {
				t.Fatalf("hour %d of %s: %v, %v", h, topic, data, err)
			}
			for _, d := range data {
				b, err := filesys.ReadFile(tail.FS, d.Path())
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(local, fmt.Sprintf("%s-%d-%s", topic, h, path.Base(d.Path())))
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				files[topic][d.Format] = append(files[topic][d.Format], p)
			}
			rid, _ := tail.Registry.Register(ctx, topic+"-value", map[bool]string{false: schemaV1, true: schemaV2}[h >= 2])
			want = append(want, tables.Partition{Topic: topic, Start: start, Duration: time.Hour, Format: string(data[0].Format),
				Location: hdfsURI + path.Dir(data[0].Path()), SchemaID: rid})
		}
		if err := m.Sync(ctx, topic, want); err != nil {
			t.Fatalf("register %s: %v", topic, err)
		}
	}
	t.Logf("compacted and registered in %v", time.Since(began))

	descV2 := describe(t, schemaV2)
	descByName := map[string]*desc{}
	for _, f := range descV2 {
		descByName[f[0].(string)] = f[1].(*desc)
	}
	expect := func(id int64, col string) any { return canon(descByName[col], produced[id][col]) }

	// The files: fastavro, pyarrow, DuckDB.
	var got struct {
		Fastavro, Pyarrow, Duckdb []map[string]any
		DuckdbTypes, PyarrowTypes map[string]string `json:"-"`
	}
	var raw map[string]json.RawMessage
	testenv.PythonScript(t, filesScript, map[string]any{"desc": descV2, "avro": files["matrix_avro"][hours.Avro],
		"parquet": files["matrix_parquet"][hours.Parquet]}, &raw)
	for k, dst := range map[string]any{"fastavro": &got.Fastavro, "pyarrow": &got.Pyarrow, "duckdb": &got.Duckdb,
		"duckdb_types": &got.DuckdbTypes, "pyarrow_types": &got.PyarrowTypes} {
		if err := json.Unmarshal(raw[k], dst); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	t.Logf("pyarrow types: %v", got.PyarrowTypes)
	t.Logf("DuckDB types: %v", got.DuckdbTypes)
	for reader, rows := range map[string][]map[string]any{"fastavro": got.Fastavro, "pyarrow": got.Pyarrow, "duckdb": got.Duckdb} {
		compareRows(t, reader, rows, produced, hourOf, func(id int64, col string) (any, bool) {
			return fileExpect(id, col, expect, hourOf)
		})
	}

	// Spark 3.5 and 4.1 through the metastore, and Spark's own reader.
	from, to := time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	var inRange int
	for _, r := range produced {
		if ts := r["tsm"].(time.Time); !ts.Before(from) && ts.Before(to) {
			inRange++
		}
	}
	var hdfsParquet []string
	for h := 0; h < 4; h++ {
		start := hour0.Add(time.Duration(h) * time.Hour)
		data, _ := hours.HourData(tail.FS, hours.Hour{Topic: "matrix_parquet", Start: start, Dir: hours.Dir(tail.Base, "matrix_parquet", start)})
		for _, d := range data {
			hdfsParquet = append(hdfsParquet, hdfsURI+d.Path())
		}
	}
	var tableNames []string
	for _, topic := range topics {
		tableNames = append(tableNames, db+"."+topic)
	}
	descSpark := append(slices.Clone(descV2), [2]any{"multi" + tables.MembersSuffix, descByName["multi"]})
	input := map[string]any{"desc": descSpark, "tables": tableNames, "parquet": hdfsParquet,
		"from": from.Format("2006-01-02 15:04:05"), "to": to.Format("2006-01-02 15:04:05")}
	for _, py := range []string{testenv.Python(t), spark4} {
		var res struct {
			Version string
			Tables  map[string]struct {
				Types  map[string]string
				Rows   []map[string]any
				Count  int
				Range  int
				Counts map[string]int
			}
			Native      []map[string]any
			NativeTypes map[string]string `json:"native_types"`
		}
		sparkBegan := time.Now()
		testenv.SparkScript(t, py, uri, sparkScript, input, &res)
		t.Logf("Spark %s in %v; native reader's types: %v", res.Version, time.Since(sparkBegan), res.NativeTypes)
		compareRows(t, "Spark "+res.Version+" native", res.Native, produced, hourOf, func(id int64, col string) (any, bool) {
			return fileExpect(id, col, expect, hourOf)
		})
		for _, topic := range topics {
			tr := res.Tables[db+"."+topic]
			t.Logf("Spark %s, %s: types %v", res.Version, topic, tr.Types)
			compacted := map[string]int{"matrix_avro": 0, "matrix_parquet": 4, "matrix_mixed": 2}[topic]
			name := fmt.Sprintf("Spark %s %s", res.Version, topic)
			if tr.Count != len(produced) || tr.Range != inRange {
				t.Errorf("%s: count(*) %d, over the timestamp range %d; want %d and %d", name, tr.Count, tr.Range, len(produced), inRange)
			}
			wantCounts := map[string]int{}
			for id := range produced {
				for col := range tr.Counts {
					if v, ok := sparkExpect(id, col, hourOf[id] < compacted, expect, hourOf); ok && v != nil {
						wantCounts[col]++
					}
				}
			}
			for col, n := range tr.Counts {
				if n != wantCounts[col] {
					t.Errorf("%s: count(%s) = %d, want %d", name, col, n, wantCounts[col])
				}
			}
			compareRows(t, name, tr.Rows, produced, hourOf, func(id int64, col string) (any, bool) {
				return sparkExpect(id, col, hourOf[id] < compacted, expect, hourOf)
			})
		}
	}
	t.Logf("type matrix checked in %v", time.Since(began))
}

// fileExpect is what a reader of the files shows of column col of record
// id: what was produced, in the fields of its writer schema.
func fileExpect(id int64, col string, expect func(int64, string) any, hourOf map[int64]int) (any, bool) {
	if col == "multi"+tables.MembersSuffix || (col == "added_n" || col == "added_s") && hourOf[id] < 2 {
		return nil, false
	}
	return expect(id, col), true
}

// sparkExpect is what Spark shows of column col of record id through the
// metastore: the table's columns are v2's, so a v1 record's added fields
// are null in Parquet and their defaults in Avro (read with the table's
// schema); the union of several types is multi_members, null in Avro
// partitions (jobs/tables' documented limit).
func sparkExpect(id int64, col string, parquet bool, expect func(int64, string) any, hourOf map[int64]int) (any, bool) {
	switch {
	case col == "multi":
		return nil, false
	case col == "multi"+tables.MembersSuffix:
		if !parquet {
			return nil, true
		}
		return expect(id, "multi"), true
	case hourOf[id] < 2 && col == "added_n":
		return nil, true
	case hourOf[id] < 2 && col == "added_s":
		if parquet {
			return nil, true
		}
		return "dflt", true
	}
	return expect(id, col), true
}

// compareRows checks that rows hold every produced record once, each
// column as want says (want's false: the column must be absent).
func compareRows(t *testing.T, reader string, rows []map[string]any, produced map[int64]map[string]any, hourOf map[int64]int,
	want func(id int64, col string) (any, bool)) {
	t.Helper()
	if len(rows) != len(produced) {
		t.Errorf("%s: %d rows, want %d", reader, len(rows), len(produced))
	}
	seen := map[int64]bool{}
	bad := 0
	for _, r := range rows {
		id, err := strconv.ParseInt(fmt.Sprint(r["id"]), 10, 64)
		if err != nil || produced[id] == nil || seen[id] {
			t.Errorf("%s: row with id %v (unknown or twice)", reader, r["id"])
			continue
		}
		seen[id] = true
		cols := map[string]bool{}
		for c := range r {
			cols[c] = true
		}
		for c := range produced[id] {
			cols[c] = true
		}
		cols["multi"+tables.MembersSuffix] = true // Spark's, through the metastore
		for c := range cols {
			if c == "hour" {
				continue
			}
			w, present := want(id, c)
			g, ok := r[c]
			if !present {
				if ok {
					t.Errorf("%s: record %d has a column %s", reader, id, c)
				}
				continue
			}
			wj, _ := json.Marshal(w)
			gj, _ := json.Marshal(g)
			if string(wj) != string(gj) {
				if bad++; bad <= 15 {
					t.Errorf("%s: record %d (hour %d) column %s = %s, want %s", reader, id, hourOf[id], c, gj, wj)
				}
			}
		}
	}
	if bad > 15 {
		t.Errorf("%s: %d differences in all", reader, bad)
	}
}
