"""Runs Spark's rewrite_data_files on an Iceberg table of a Hive catalog, repeatedly.

argv: metastore URI, iceberg-spark-runtime jar, scratch dir, table (db.name), rounds.
Prints one JSON line per round with the rewrite's counts, then the table's
row count and distinct (partition, offset) count as Spark reads them.
"""
import json
import sys

from pyspark.sql import SparkSession

uri, jar, scratch, table, rounds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
spark = (SparkSession.builder.master("local[1]").appName("icetable-rewrite")
         .config("spark.jars", jar)
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.ice.type", "hive")
         .config("spark.sql.catalog.ice.uri", uri)
         .config("spark.sql.warehouse.dir", "file://" + scratch)
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "1").config("spark.driver.memory", "768m")
         .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dderby.system.home=" + scratch)
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
print(json.dumps({"ready": True}), flush=True)
for _ in range(rounds):
    try:
        r = spark.sql("CALL ice.system.rewrite_data_files(table => '%s', options => map('rewrite-all', 'true'))" % table).collect()[0]
        print(json.dumps({"rewritten": r["rewritten_data_files_count"], "added": r["added_data_files_count"]}), flush=True)
    except Exception as e:  # lost the commit race to the appender: Spark's own retries ran out
        print(json.dumps({"failed": str(e).splitlines()[0][:300]}), flush=True)
