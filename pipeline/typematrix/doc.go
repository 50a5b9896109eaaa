// Package typematrix holds the type-matrix test of issue 40: a value
// schema with every Avro type and logical type the registry accepts, in
// two versions (the second adds fields with defaults), thousands of
// records of random and edge values produced to a real cluster, loaded by
// the loader into HDFS as Avro, compacted into Parquet and registered in
// the Hive Metastore; then fastavro (the Avro files), pyarrow and DuckDB
// (the Parquet files), Spark 3.5.9 and 4.1.1 through the metastore with
// default settings (three tables: Avro partitions only, Parquet only,
// mixed) and Spark's own Parquet reader read every value back, and each
// is compared with what was produced (matrix_test.go says how each type
// is compared, and what Spark shows of a union of several types in an
// Avro partition: null, jobs/tables' documented limit).
//
// The package has no code beyond its tests.
package typematrix
