package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseConfigIssueExample(t *testing.T) {
	list, err := ParseConfig([]byte(`
jobs:
  - name: load-page-views
    schedule: "@every 5m"
    kind: loader
    args: {config: /etc/tributary/loader.properties}
    timeout: 30m
    retries: 2
  - name: nightly-report
    schedule: "0 30 2 * * *"
    kind: exec
    args: {command: ["sh", "-c", "make-report > /tmp/report.txt"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "load-page-views" || list[0].EffectiveTimeout() != 30*time.Minute || list[0].Retries != 2 {
		t.Fatalf("parsed %+v", list)
	}
	// @every is aligned to the epoch, so that every scheduler computes the same due times.
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	if got, want := list[0].Next(at), time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("@every 5m after %v = %v, want %v", at, got, want)
	}
	if got, want := list[1].Next(at), time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC); !got.After(want) || got.Hour() != 2 || got.Minute() != 30 || got.Day() != 3 {
		t.Errorf("0 30 2 * * * after %v = %v", at, got)
	}
	if list[1].EffectiveTimeout() != DefaultTimeout || list[1].EffectiveBackoff() != DefaultRetryBackoff {
		t.Errorf("defaults not applied: %+v", list[1])
	}
}

func TestParseConfigBad(t *testing.T) {
	const head = "jobs:\n  - name: j1\n"
	cases := []struct{ name, yaml, job, field string }{
		{"invalid schedule", head + "    schedule: \"every five minutes\"\n    kind: exec\n    args: {command: [\"true\"]}\n", "j1", "schedule"},
		{"never due", head + "    schedule: \"0 0 0 30 2 *\"\n    kind: exec\n    args: {command: [\"true\"]}\n", "j1", "never comes due"},
		{"missing schedule", head + "    kind: exec\n    args: {command: [\"true\"]}\n", "j1", "schedule"},
		{"unknown kind", head + "    schedule: \"@every 1m\"\n    kind: spark\n", "j1", "kind"},
		{"missing kind", head + "    schedule: \"@every 1m\"\n", "j1", "kind"},
		{"loader without config", head + "    schedule: \"@every 1m\"\n    kind: loader\n    args: {}\n", "j1", "args.config"},
		{"exec without command", head + "    schedule: \"@every 1m\"\n    kind: exec\n", "j1", "args.command"},
		{"compact without base", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {loader_job: l}\n", "j1", "args.base"},
		{"compact bad codec", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, codec: lzo}\n", "j1", "args.codec"},
		{"compact bad parquet_timestamp_type", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, parquet_timestamp_type: TIMESTAMP_MILLIS}\n", "j1", "args.parquet_timestamp_type"},
		{"compact empty parquet_timestamp_type", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, parquet_timestamp_type: \"\"}\n", "j1", "args.parquet_timestamp_type"},
		{"compact parquet_timestamp_type number", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, parquet_timestamp_type: 64}\n", "j1", "args.parquet_timestamp_type"},
		{"compact empty hdfs_config", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, hdfs_config: \"\"}\n", "j1", "args.hdfs_config"},
		{"compact threshold over 1", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, completeness.threshold: 1.5}\n", "j1", "args.completeness.threshold"},
		{"compact bad timeout", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, completeness.timeout: soon}\n", "j1", "args.completeness.timeout"},
		{"compact audit_url not http", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, audit_url: \"audit:8090\"}\n", "j1", "args.audit_url"},
		{"compact sort_by not a map", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, sort_by: user_id}\n", "j1", "args.sort_by"},
		{"compact sort_by empty column", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, sort_by: {requests: \"user_id,,ts\"}}\n", "j1", "args.sort_by.requests"},
		{"compact sort_by column with space", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, sort_by: {requests: [\"user id\"]}}\n", "j1", "args.sort_by.requests"},
		{"compact sort_by no columns", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, sort_by: {requests: []}}\n", "j1", "args.sort_by.requests"},
		{"compact sort_by number", head + "    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /x, loader_job: l, sort_by: {requests: 3}}\n", "j1", "args.sort_by.requests"},
		{"retention without age", head + "    schedule: \"@hourly\"\n    kind: retention\n    args: {base: /x}\n", "j1", "args.max_age"},
		{"retention bad topic age", head + "    schedule: \"@hourly\"\n    kind: retention\n    args: {base: /x, topics: {pv: soon}}\n", "j1", "args.topics.pv"},
		{"unknown argument", head + "    schedule: \"@every 1m\"\n    kind: exec\n    args: {command: [\"true\"], shell: bash}\n", "j1", "args.shell"},
		{"bad timeout", head + "    schedule: \"@every 1m\"\n    kind: exec\n    args: {command: [\"true\"]}\n    timeout: forever\n", "j1", "timeout"},
		{"negative retries", head + "    schedule: \"@every 1m\"\n    kind: exec\n    args: {command: [\"true\"]}\n    retries: -1\n", "j1", "retries"},
		{"unknown field", head + "    schedule: \"@every 1m\"\n    kind: exec\n    args: {command: [\"true\"]}\n    retry: 3\n", "j1", "retry"},
		{"missing name", "jobs:\n  - schedule: \"@every 1m\"\n    kind: exec\n    args: {command: [\"true\"]}\n", "jobs[0]", "name"},
		{"duplicate name", head + "    schedule: \"@every 1m\"\n    kind: exec\n    args: {command: [\"true\"]}\n" + head[6:] + "    schedule: \"@every 1m\"\n    kind: exec\n    args: {command: [\"true\"]}\n", "j1", "name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.yaml))
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.job) || !strings.Contains(msg, c.field) {
				t.Errorf("error %q does not name job %q and field %q", msg, c.job, c.field)
			}
		})
	}
	if _, err := ParseConfig([]byte("jobs: []\n")); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("empty jobs list: %v", err)
	}
}

// TestReadinessArgsPassedOn: a compact job hands its readiness and
// catalog arguments to `tributary jobs compact` as flags, retention its
// catalog_file.
func TestReadinessArgsPassedOn(t *testing.T) {
	jobs, err := ParseConfig([]byte(`jobs:
  - name: c
    schedule: "@hourly"
    kind: compact
    args: {base: /data, loader_job: l, audit_url: "http://audit:8090", completeness.threshold: 0.999, completeness.timeout: 6h, catalog_file: /var/cat.json}
  - name: r
    schedule: "@hourly"
    kind: retention
    args: {base: /data, max_age: 168h, catalog_file: /var/cat.json}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"c": "--audit-url http://audit:8090 --completeness-threshold 0.999 --completeness-timeout 6h --catalog-file /var/cat.json",
		"r": "--catalog-file /var/cat.json"}
	for _, j := range jobs {
		tk, err := taskFor(j, "tributary", "sum.json")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(tk.argv, " "), want[j.Name]) {
			t.Errorf("%s: argv %q lacks %q", j.Name, tk.argv, want[j.Name])
		}
	}
}

// TestTimestampTypePassedOn: a compact job's parquet_timestamp_type is
// handed to `tributary jobs compact` as --parquet-timestamp-type.
func TestTimestampTypePassedOn(t *testing.T) {
	jobs, err := ParseConfig([]byte(`jobs:
  - name: c
    schedule: "@hourly"
    kind: compact
    args: {base: /data, loader_job: l, parquet_timestamp_type: INT64}
`))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := taskFor(jobs[0], "tributary", "sum.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := "--parquet-timestamp-type INT64"; !strings.Contains(strings.Join(tk.argv, " "), want) {
		t.Errorf("argv %q lacks %q", tk.argv, want)
	}
}

// TestHDFSConfigPassedOn: compact and retention jobs hand args.hdfs_config
// to their command as --hdfs-config.
func TestHDFSConfigPassedOn(t *testing.T) {
	jobs, err := ParseConfig([]byte(`jobs:
  - name: c
    schedule: "@hourly"
    kind: compact
    args: {base: "hdfs://nn:8020/data", loader_job: l, hdfs_config: /etc/tributary/loader.properties}
  - name: r
    schedule: "@hourly"
    kind: retention
    args: {base: "hdfs://nn:8020/data", max_age: 168h, hdfs_config: /etc/tributary/loader.properties}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		tk, err := taskFor(j, "tributary", "sum.json")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(tk.argv, " "), "--hdfs-config /etc/tributary/loader.properties") {
			t.Errorf("%s: argv %q lacks --hdfs-config", j.Name, tk.argv)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"100": 100, "128MB": 128 << 20, "128MiB": 128 << 20, "1g": 1 << 30, "4 KiB": 4096} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestSchedulesAreUTC(t *testing.T) {
	for spec, want := range map[string]time.Time{
		"0 0 9 * * *":                  time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC),
		"TZ=Asia/Tokyo 0 0 9 * * *":    time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC),
		"@daily":                       time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC),
		"CRON_TZ=Asia/Tokyo 0 9 * * *": time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC),
	} {
		s, err := ParseSchedule(spec)
		if err != nil {
			t.Fatal(err)
		}
		j := Job{schedule: s}
		if got := j.Next(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)); !got.Equal(want) {
			t.Errorf("%q: next %v, want %v", spec, got, want)
		}
	}
}

// TestTablesConfigPassedOn: tables_config reaches compact and retention as
// --tables-config; with catalog_file too the job is refused, naming it.
func TestTablesConfigPassedOn(t *testing.T) {
	jobs, err := ParseConfig([]byte(`jobs:
  - name: c
    schedule: "@hourly"
    kind: compact
    args: {base: /data, loader_job: l, tables_config: /etc/tributary/tables.properties}
  - name: r
    schedule: "@hourly"
    kind: retention
    args: {base: /data, max_age: 168h, tables_config: /etc/tributary/tables.properties}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		tk, err := taskFor(j, "tributary", "sum.json")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(tk.argv, " "), "--tables-config /etc/tributary/tables.properties") {
			t.Errorf("%s: argv %q lacks --tables-config", j.Name, tk.argv)
		}
	}
	_, err = ParseConfig([]byte(`jobs:
  - name: c
    schedule: "@hourly"
    kind: compact
    args: {base: /data, loader_job: l, tables_config: /t.properties, catalog_file: /c.json}
`))
	if err == nil || !strings.Contains(err.Error(), "tables_config") {
		t.Errorf("both catalogs: err %v, want one naming tables_config", err)
	}
}

// TestSortByPassedOn: a compact job's sort_by, as lists or "col,col"
// strings, reaches `tributary jobs compact` as one --sort-by per topic.
func TestSortByPassedOn(t *testing.T) {
	jobs, err := ParseConfig([]byte(`jobs:
  - name: c
    schedule: "@hourly"
    kind: compact
    args:
      base: /data
      loader_job: l
      sort_by: {requests: [user_id, ts], pageviews: "user, timestamp"}
`))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := taskFor(jobs[0], "tributary", "sum.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := "--sort-by pageviews=user,timestamp --sort-by requests=user_id,ts"; !strings.Contains(strings.Join(tk.argv, " "), want) {
		t.Errorf("argv %q lacks %q", tk.argv, want)
	}
}

// TestLoadConfigChecksFiles: LoadConfig (what `jobs serve` reads) refuses
// a job whose loader properties file, or compact's hdfs_config, does not
// exist, naming the job, the argument and the path; ParseConfig, which
// checks a document on any machine, does not look at files.
func TestLoadConfigChecksFiles(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "loader.properties")
	if err := os.WriteFile(conf, []byte("name=hourly\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(doc string) string {
		p := filepath.Join(dir, "jobs.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loaderJob := func(path string) string {
		return "jobs:\n  - name: load\n    schedule: \"@every 5m\"\n    kind: loader\n    args: {config: " + path + "}\n"
	}
	if _, err := LoadConfig(write(loaderJob(conf))); err != nil {
		t.Fatalf("an existing file: %v", err)
	}
	missing := filepath.Join(dir, "loadr.properties")
	if _, err := ParseConfig([]byte(loaderJob(missing))); err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	_, err := LoadConfig(write(loaderJob(missing)))
	var fe *FieldError
	if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidConfig) || fe.Job != "load" || fe.Field != "args.config" ||
		err.Error() != `job "load": args.config: `+missing+`: no such file or directory` {
		t.Errorf("a missing loader config: %v", err)
	}
	_, err = LoadConfig(write("jobs:\n  - name: c\n    schedule: \"@hourly\"\n    kind: compact\n    args: {base: /b, loader_job: l, hdfs_config: " + missing + "}\n"))
	if err == nil || err.Error() != `job "c": args.hdfs_config: `+missing+`: no such file or directory` {
		t.Errorf("a missing hdfs_config: %v", err)
	}
}
