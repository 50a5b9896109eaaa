// Package tablestest holds the pipeline-wide tests of the loaded data as
// tables (issue 30's must-shows): the loader and compaction run as the
// scheduler's child processes (bin/tributary) into the real HDFS, and
// register hours in a real Hive Metastore through `jobs compact
// --tables-config`; the tests then read the metastore back and compare it
// with the files (package hours is the truth).
//
//   - TestMetastoreDownThenSchemaBlocked: the metastore stopped for a
//     while (a metastore of the test's own, testenv.StartHiveMetastore):
//     loading goes on, ready hours queue (_SUCCESS, not swapped) and are
//     registered once it returns, none twice; the job history and the
//     scheduler's metrics show the failed runs meanwhile. Then a schema
//     version that changes a column's type stops the registration of its
//     topic with the error in the history, the summary's
//     tables_schema_blocked and tributary_jobs_tables_schema_blocked,
//     while the other topic goes on.
//   - TestCompactionCrashRealMetastore: `jobs compact --tables-config`
//     SIGKILLed at its steps of readiness, registration and swap against
//     the real metastore: afterwards the metastore shows only ready hours
//     at complete locations of one format (DuckDB counts the Parquet ones),
//     and after a recovery run exactly what the files publish. Four crash
//     points by default, every step with TRIBUTARY_FULL=1.
//   - TestSparkCountsDuringSwap: page views of two datacenters loaded into
//     HDFS; compaction held (compact.EnvPauseAt) after the commit of the
//     second hour's swap; Spark SQL's count(*) and count(DISTINCT
//     (datacenter, producer, seq)) per hour equal what was produced, over
//     a Parquet, a mid-swap and an Avro partition at once.
//   - TestDatacentersMirrorKilledSparkCountsAudit: the pipeline end to
//     end: two datacenter clusters (on the test ZooKeeper) and analytics,
//     `tributary mirror` and `tributary audit serve` as child processes,
//     the scheduler's loader and compact jobs into HDFS and the metastore;
//     the mirror SIGKILLed and restarted before, during (compaction held by
//     compact.EnvPauseAt) and after a compaction; Spark SQL's count per
//     hour equals the audit service's producer tier (its HTTP API) and
//     what was produced, each (datacenter, producer, seq) once, and the
//     loader dropped exactly the mirror's re-sends.
//
// The package has no code beyond its tests; child processes are started
// with internal/testkit/testproc's binary (helpers_test.go's startChild).
package tablestest
