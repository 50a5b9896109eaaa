package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/tributary/tributary/jobs/compact"
)

// Kind says what a job runs.
type Kind string

const (
	// KindLoader runs `tributary loader run --config <args.config>` as a child process.
	KindLoader Kind = "loader"
	// KindCompact runs `tributary jobs compact` (Avro hours into Parquet) as a child process.
	KindCompact Kind = "compact"
	// KindRetention runs `tributary jobs retention` (delete old hours) as a child process.
	KindRetention Kind = "retention"
	// KindExec runs a user's command (args.command) as a child process.
	KindExec Kind = "exec"
)

// Defaults of a job's optional fields.
const (
	DefaultTimeout      = time.Hour
	DefaultRetryBackoff = 10 * time.Second
	DefaultCompactDelay = 10 * time.Minute
	// DefaultTargetFileSize is the size compaction aims its Parquet files at.
	DefaultTargetFileSize = 128 << 20
)

// Spec is one job as written in the YAML configuration (and as published
// in ZooKeeper for `tributary jobs list`). Zero values mean defaults.
type Spec struct {
	Name         string         `yaml:"name" json:"name"`
	Schedule     string         `yaml:"schedule" json:"schedule"`
	Kind         Kind           `yaml:"kind" json:"kind"`
	Args         map[string]any `yaml:"args" json:"args,omitempty"`
	Timeout      Duration       `yaml:"timeout" json:"timeout,omitempty"`
	Retries      int            `yaml:"retries" json:"retries,omitempty"`
	RetryBackoff Duration       `yaml:"retry_backoff" json:"retry_backoff,omitempty"`
	Paused       bool           `yaml:"paused" json:"paused,omitempty"`
}

// Duration is a time.Duration written as "30m" in YAML and JSON.
type Duration time.Duration

// UnmarshalYAML accepts a Go duration string ("90s", "1h30m").
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("%q is not a duration like 30m or 1h30m", n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as "30m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Job is a validated Spec with its parsed schedule.
type Job struct {
	Spec
	schedule cron.Schedule
}

// FieldError says which job and which field of the configuration is wrong.
type FieldError struct {
	Index int    // position in the jobs list
	Job   string // the job's name ("" when missing)
	Field string // e.g. "schedule", "args.config"
	Err   error
}

func (e *FieldError) Error() string {
	who := fmt.Sprintf("jobs[%d]", e.Index)
	if e.Job != "" {
		who = fmt.Sprintf("job %q", e.Job)
	}
	return fmt.Sprintf("%s: %s: %v", who, e.Field, e.Err)
}

func (e *FieldError) Unwrap() []error { return []error{ErrInvalidConfig, e.Err} }

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a cron expression with optional seconds ("0 30 2 * * *",
// "*/5 * * * *") or a descriptor ("@every 5m", "@hourly"). Times are UTC
// unless the expression starts with TZ=.
func ParseSchedule(s string) (cron.Schedule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("missing")
	}
	// robfig/cron reads a spec without a zone in the machine's local zone;
	// schedulers on machines in different zones must agree, so UTC.
	if !strings.HasPrefix(s, "TZ=") && !strings.HasPrefix(s, "CRON_TZ=") {
		s = "TZ=UTC " + s
	}
	return cronParser.Parse(s)
}

// Next returns the first due time strictly after t. "@every D" is aligned to
// multiples of D since the Unix epoch, so that every scheduler computes the
// same due times whenever it started (robfig/cron counts from the start).
func (j *Job) Next(t time.Time) time.Time {
	if every, ok := j.schedule.(cron.ConstantDelaySchedule); ok {
		d := every.Delay
		return time.Unix(0, (t.UnixNano()/int64(d)+1)*int64(d)).UTC()
	}
	return j.schedule.Next(t.UTC()).UTC()
}

// LoadConfig reads and validates a jobs YAML file, and checks that the
// files its jobs name for their child processes exist on this machine
// (CheckFiles): a missing loader properties file would otherwise surface
// only as a failed run at the job's first due time.
func LoadConfig(path string) ([]Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	list, err := ParseConfig(data)
	if err != nil {
		return nil, err
	}
	return list, CheckFiles(list)
}

// fileArgs are the arguments that name a local file the child process reads.
var fileArgs = []string{"config", "hdfs_config", "tables_config"}

// CheckFiles reports, as a *FieldError naming the job and the argument,
// the first file a job's arguments name that does not exist (relative
// paths are the child's: relative to this process's directory).
func CheckFiles(list []Job) error {
	for i, j := range list {
		if j.Kind == KindExec {
			continue // a user's command: its arguments are its own
		}
		for _, k := range fileArgs {
			p, ok := j.Args[k].(string)
			if !ok || p == "" {
				continue
			}
			if _, err := os.Stat(p); err != nil {
				return &FieldError{Index: i, Job: j.Name, Field: "args." + k, Err: fmt.Errorf("%s: %w", p, errors.Unwrap(err))}
			}
		}
	}
	return nil
}

// ParseConfig parses and validates a jobs YAML document. Unknown keys are
// errors, so that a misspelt field never silently means its default.
func ParseConfig(data []byte) ([]Job, error) {
	var file struct {
		Jobs []yaml.Node `yaml:"jobs"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if len(file.Jobs) == 0 {
		return nil, fmt.Errorf("%w: no jobs: the file needs a top-level \"jobs:\" list", ErrInvalidConfig)
	}
	var out []Job
	seen := map[string]bool{}
	for i, n := range file.Jobs {
		var s Spec
		if err := decodeStrict(&n, &s); err != nil {
			name := ""
			var probe struct {
				Name string `yaml:"name"`
			}
			if n.Decode(&probe) == nil {
				name = probe.Name
			}
			return nil, &FieldError{Index: i, Job: name, Field: fieldOf(err), Err: err}
		}
		if seen[s.Name] {
			return nil, &FieldError{Index: i, Job: s.Name, Field: "name", Err: errors.New("duplicate job name")}
		}
		seen[s.Name] = true
		j, err := s.Validate(i)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

func decodeStrict(n *yaml.Node, s *Spec) error {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(n); err != nil {
		return err
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	return dec.Decode(s)
}

var fieldInErr = regexp.MustCompile(`field (\w+) not found|into (\S+)`)

// fieldOf guesses the YAML key a decoding error is about.
func fieldOf(err error) string {
	msg := err.Error()
	if m := fieldInErr.FindStringSubmatch(msg); m != nil && m[1] != "" {
		return m[1]
	}
	for _, f := range []string{"timeout", "retry_backoff", "retries", "paused", "args", "schedule", "kind", "name"} {
		if strings.Contains(msg, f) {
			return f
		}
	}
	// A Duration's own message does not say which key; the two durations
	// are the only values with custom decoding.
	if strings.Contains(msg, "duration") {
		return "timeout/retry_backoff"
	}
	return "(document)"
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`)

// Validate checks a spec (index is its position, for messages) and returns
// the Job with its parsed schedule.
func (s Spec) Validate(index int) (Job, error) {
	fail := func(field string, err error) (Job, error) {
		return Job{}, &FieldError{Index: index, Job: s.Name, Field: field, Err: err}
	}
	if s.Name == "" {
		return fail("name", errors.New("missing"))
	}
	if !validName.MatchString(s.Name) {
		return fail("name", fmt.Errorf("%q: use letters, digits, '.', '_' and '-' (it is a ZooKeeper node name)", s.Name))
	}
	sched, err := ParseSchedule(s.Schedule)
	if err != nil {
		return fail("schedule", fmt.Errorf("%q: %w", s.Schedule, err))
	}
	if sched.Next(time.Now()).IsZero() {
		return fail("schedule", fmt.Errorf("%q never comes due (e.g. February 30)", s.Schedule))
	}
	if s.Timeout < 0 {
		return fail("timeout", errors.New("negative"))
	}
	if s.Retries < 0 {
		return fail("retries", errors.New("negative"))
	}
	if s.RetryBackoff < 0 {
		return fail("retry_backoff", errors.New("negative"))
	}
	if err := validateArgs(s.Kind, s.Args); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return fail(fe.Field, fe.Err)
		}
		return fail("kind", err)
	}
	return Job{Spec: s, schedule: sched}, nil
}

// EffectiveTimeout is the per-attempt timeout (default DefaultTimeout).
func (s Spec) EffectiveTimeout() time.Duration {
	if s.Timeout > 0 {
		return time.Duration(s.Timeout)
	}
	return DefaultTimeout
}

// EffectiveBackoff is the pause before the first retry (doubled each retry).
func (s Spec) EffectiveBackoff() time.Duration {
	if s.RetryBackoff > 0 {
		return time.Duration(s.RetryBackoff)
	}
	return DefaultRetryBackoff
}

// argKinds lists each kind's argument keys and whether they are required.
var argKinds = map[Kind]map[string]bool{
	KindLoader: {"config": true},
	KindExec:   {"command": true, "env": false, "dir": false},
	KindCompact: {"base": true, "loader_job": true, "topics": false, "delay": false, "codec": false, "target_file_size": false, "hdfs_config": false,
		"audit_url": false, "completeness.threshold": false, "completeness.timeout": false, "catalog_file": false,
		"tables_config": false, "sort_by": false, "parquet_timestamp_type": false},
	KindRetention: {"base": true, "max_age": false, "topics": false, "hdfs_config": false, "catalog_file": false, "tables_config": false},
}

func argErr(key string, format string, a ...any) error {
	return &FieldError{Field: "args." + key, Err: fmt.Errorf(format, a...)}
}

func validateArgs(kind Kind, args map[string]any) error {
	keys, ok := argKinds[kind]
	if !ok {
		if kind == "" {
			return errors.New("missing (loader, compact, retention or exec)")
		}
		return fmt.Errorf("unknown kind %q (loader, compact, retention or exec)", kind)
	}
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := keys[k]; !ok {
			return argErr(k, "unknown argument for kind %s", kind)
		}
	}
	// hdfs_config: the properties file with base's HDFS client keys
	// (Kerberos), passed on as --hdfs-config.
	if v, ok := args["hdfs_config"]; ok {
		if s, _ := v.(string); s == "" {
			return argErr("hdfs_config", "%v: must be the path of a properties file", v)
		}
	}
	for k, req := range keys {
		if _, ok := args[k]; req && !ok {
			return argErr(k, "missing (required for kind %s)", kind)
		}
	}
	switch kind {
	case KindLoader:
		if s, ok := args["config"].(string); !ok || s == "" {
			return argErr("config", "must be a non-empty path")
		}
	case KindExec:
		cmd, err := stringList(args["command"])
		if err != nil || len(cmd) == 0 || cmd[0] == "" {
			return argErr("command", "must be a non-empty list of strings, e.g. [\"sh\", \"-c\", \"...\"]")
		}
		if v, ok := args["env"]; ok {
			if _, err := stringMap(v); err != nil {
				return argErr("env", "%v", err)
			}
		}
		if v, ok := args["dir"]; ok {
			if _, ok := v.(string); !ok {
				return argErr("dir", "must be a path")
			}
		}
	case KindCompact:
		if err := catalogArgs(args); err != nil {
			return err
		}
		if s, ok := args["base"].(string); !ok || s == "" {
			return argErr("base", "must be a non-empty URI (hdfs://host:port/path or a local path)")
		}
		if s, ok := args["loader_job"].(string); !ok || s == "" {
			return argErr("loader_job", "must name the loader job whose commits close hours")
		}
		if v, ok := args["topics"]; ok {
			if _, err := stringList(v); err != nil {
				return argErr("topics", "%v", err)
			}
		}
		if v, ok := args["delay"]; ok {
			if _, err := durationArg(v); err != nil {
				return argErr("delay", "%v", err)
			}
		}
		if v, ok := args["codec"]; ok {
			if s, _ := v.(string); s != "snappy" && s != "zstd" {
				return argErr("codec", "%v: must be zstd or snappy", v)
			}
		}
		if v, ok := args["parquet_timestamp_type"]; ok {
			s, _ := v.(string)
			if _, err := compact.ParseTimestampType(s); err != nil || s == "" {
				return argErr("parquet_timestamp_type", "%v: must be INT96 (the default, which Spark reads through a Hive table) or INT64 (native Parquet readers only)", v)
			}
		}
		if v, ok := args["target_file_size"]; ok {
			if n, err := ParseSize(fmt.Sprint(v)); err != nil || n <= 0 {
				return argErr("target_file_size", "%v: must be a positive size like 134217728, 128MB or 1GiB", v)
			}
		}
		if v, ok := args["sort_by"]; ok {
			if _, err := sortByArg(v); err != nil {
				return err
			}
		}
		if v, ok := args["audit_url"]; ok {
			if s, _ := v.(string); !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
				return argErr("audit_url", "%v: must be the audit service's http://host:port", v)
			}
		}
		if v, ok := args["completeness.threshold"]; ok {
			if f, err := strconv.ParseFloat(fmt.Sprint(v), 64); err != nil || f <= 0 || f > 1 {
				return argErr("completeness.threshold", "%v: must be a fraction in (0, 1], e.g. 0.999", v)
			}
		}
		if v, ok := args["completeness.timeout"]; ok {
			if d, err := durationArg(v); err != nil || d <= 0 {
				return argErr("completeness.timeout", "%v: must be a positive duration like 6h", v)
			}
		}
	case KindRetention:
		if err := catalogArgs(args); err != nil {
			return err
		}
		if s, ok := args["base"].(string); !ok || s == "" {
			return argErr("base", "must be a non-empty URI (hdfs://host:port/path or a local path)")
		}
		_, hasMax := args["max_age"]
		_, hasTopics := args["topics"]
		if !hasMax && !hasTopics {
			return argErr("max_age", "missing: give max_age, topics (a map topic: age) or both")
		}
		if hasMax {
			if d, err := durationArg(args["max_age"]); err != nil || d <= 0 {
				return argErr("max_age", "%v: must be a positive duration like 168h", args["max_age"])
			}
		}
		if hasTopics {
			m, err := stringMap(args["topics"])
			if err != nil {
				return argErr("topics", "%v", err)
			}
			for t, v := range m {
				if d, err := time.ParseDuration(v); err != nil || d <= 0 {
					return argErr("topics."+t, "%q: must be a positive duration like 72h", v)
				}
			}
		}
	}
	return nil
}

// sortByArg reads a compact job's sort_by: a map topic -> columns, each a
// list of strings or one "col,col" string. The columns' names are the
// compaction's to check (against each hour's schema); here only what would
// not survive the trip as --sort-by TOPIC=COL,COL is refused.
func sortByArg(v any) (map[string][]string, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil, argErr("sort_by", "must be a map topic: [columns] (or topic: \"col,col\")")
	}
	out := make(map[string][]string, len(m))
	for topic, e := range m {
		var cols []string
		switch e := e.(type) {
		case string:
			cols = strings.Split(e, ",")
		case []any:
			var err error
			if cols, err = stringList(e); err != nil {
				return nil, argErr("sort_by."+topic, "%v", err)
			}
		default:
			return nil, argErr("sort_by."+topic, "%v: must be a list of columns or a \"col,col\" string", e)
		}
		if strings.ContainsAny(topic, "=") || strings.TrimSpace(topic) == "" {
			return nil, argErr("sort_by."+topic, "not a topic name")
		}
		if len(cols) == 0 {
			return nil, argErr("sort_by."+topic, "no columns")
		}
		for i, c := range cols {
			c = strings.TrimSpace(c)
			if c == "" || strings.ContainsAny(c, ",= \t") {
				return nil, argErr("sort_by."+topic, "column %q: must be a field name", c)
			}
			cols[i] = c
		}
		out[topic] = cols
	}
	return out, nil
}

func stringList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("must be a list of strings")
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("element %d (%v) is not a string", i, e)
		}
		out[i] = s
	}
	return out, nil
}

func stringMap(v any) (map[string]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a map of strings")
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		switch e := e.(type) {
		case string:
			out[k] = e
		case int, float64, bool:
			out[k] = fmt.Sprint(e)
		default:
			return nil, fmt.Errorf("value of %q is not a string", k)
		}
	}
	return out, nil
}

func durationArg(v any) (time.Duration, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%v is not a duration like 10m", v)
	}
	return time.ParseDuration(s)
}

var sizeRE = regexp.MustCompile(`^\s*(\d+)\s*([KMGT]?I?B?)?\s*$`)

// ParseSize reads a byte count: "134217728", "128MB", "128MiB", "1G".
// K/M/G/T are powers of 1024 either way: these are file sizes.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(strings.ToUpper(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, err
	}
	if m[2] != "" {
		switch m[2][0] {
		case 'K':
			n <<= 10
		case 'M':
			n <<= 20
		case 'G':
			n <<= 30
		case 'T':
			n <<= 40
		}
	}
	return n, nil
}

// catalogArgs checks the catalog arguments of compact and retention jobs:
// catalog_file (a local JSON file) or tables_config (the properties of a
// Hive Metastore catalog), paths, at most one of them.
func catalogArgs(args map[string]any) error {
	for _, k := range []string{"catalog_file", "tables_config"} {
		if v, ok := args[k]; ok {
			if s, _ := v.(string); s == "" {
				return argErr(k, "%v: must be a path", v)
			}
		}
	}
	if _, ok := args["catalog_file"]; ok {
		if _, ok := args["tables_config"]; ok {
			return argErr("tables_config", "give catalog_file or tables_config, not both")
		}
	}
	return nil
}
