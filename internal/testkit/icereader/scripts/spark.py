# spark.py: a local Spark session with Iceberg's runtime and the catalogs of
# the JSON on stdin's first line; prints "READY <version>", then runs one
# request per line, {"sql": "..."}, and answers each with one line, "RESULT "
# and {"schema", "rows"} (rows as arrays, encoded by encode.py), or "ERROR "
# and the error's text as a JSON string. Ends at end of input.
import traceback

os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
from pyspark.sql import SparkSession

conf = json.loads(sys.stdin.readline())
b = (SparkSession.builder.master("local[2]").appName("tributary-icereader")
     .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
     .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
     .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "768m")
     .config("spark.sql.session.timeZone", "UTC")
     .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Duser.timezone=UTC -Dderby.system.home=" + conf["scratch"])
     .config("spark.sql.warehouse.dir", "file://" + conf["scratch"] + "/spark-warehouse")
     .config("spark.jars", ",".join(conf["jars"]))
     .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"))
for k, v in conf["settings"].items():
    b = b.config(k, v)
spark = b.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
print("READY " + spark.version, flush=True)

for line in sys.stdin:
    req = json.loads(line)
    try:
        df = spark.sql(req["sql"])
        descs = [{"n": f.name, "t": spark_desc(f.dataType)} for f in df.schema.fields]
        rows = [[encode(d["t"], r[i]) for i, d in enumerate(descs)] for r in df.collect()]
        print("RESULT " + dumps({"schema": descs, "rows": rows}), flush=True)
    except Exception as e:
        traceback.print_exc(file=sys.stderr)
        print("ERROR " + dumps(str(e)), flush=True)
spark.stop()
