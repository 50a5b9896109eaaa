package testenv

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// EnvKafka28Lib overrides the directory holding Apache Kafka 2.8.2's jars
// (default: .cache/kafka-2.8/lib in the repository, where
// scripts/install-deps.sh puts them).
const EnvKafka28Lib = "TRIBUTARY_TEST_KAFKA28_LIB"

// EnvKafka39Lib overrides the directory holding Apache Kafka 3.9's jars
// (default: .cache/kafka/lib in the repository, where scripts/kafka.sh
// fetch, run by scripts/install-deps.sh, puts them).
const EnvKafka39Lib = "TRIBUTARY_TEST_KAFKA39_LIB"

// The jar directories relative to the repository root; they must match
// scripts/install-deps.sh and scripts/kafka.sh.
const (
	kafka28Lib = ".cache/kafka-2.8/lib"
	kafka39Lib = ".cache/kafka/lib"
)

// KafkaTools runs the command-line tools of one Apache Kafka release: Java
// mains on that release's classpath, logging warnings to stderr.
type KafkaTools struct {
	// Java is the java binary (OpenJDK 17, as for ZooKeeper).
	Java string
	// Lib is the directory of the release's jars.
	Lib string
	// Log4j is a log4j.properties logging warnings only, on stderr.
	Log4j string
}

// Kafka28Tools returns Apache Kafka 2.8.2's tools or fails t, naming
// `make deps` when the jars are missing. 2.8 is the last release whose
// TopicCommand and ConfigCommand still work on ZooKeeper directly.
func Kafka28Tools(t testing.TB) KafkaTools {
	t.Helper()
	return kafkaTools(t, "2.8.2", EnvKafka28Lib, kafka28Lib, "kafka_2.13-2.8.2.jar",
		"org.apache.kafka:kafka_2.13:2.8.2 (scripts/kafka-2.8/pom.xml)")
}

// Kafka39Tools returns Apache Kafka 3.9's tools or fails t, naming `make
// deps` when the jars are missing. Its admin commands are in
// org.apache.kafka.tools (TopicCommand, LeaderElectionCommand,
// DeleteRecordsCommand, LogDirsCommand, reassign.ReassignPartitionsCommand)
// and kafka.admin.ConfigCommand; they speak only the Kafka protocol
// (--bootstrap-server).
func Kafka39Tools(t testing.TB) KafkaTools {
	t.Helper()
	return kafkaTools(t, "3.9", EnvKafka39Lib, kafka39Lib, "kafka-tools-3.9.1.jar",
		"org.apache.kafka:kafka_2.13 and kafka-tools 3.9.1 (scripts/kafka/pom.xml)")
}

// kafkaTools finds one release's jars (env overriding rel under the
// repository root), checked by the presence of jar, and OpenJDK 17.
func kafkaTools(t testing.TB, release, env, rel, jar, what string) KafkaTools {
	t.Helper()
	root := RepoRoot(t)
	lib := os.Getenv(env)
	if lib == "" {
		lib = filepath.Join(root, rel)
	}
	if _, err := os.Stat(filepath.Join(lib, jar)); err != nil {
		t.Fatalf("Apache Kafka %s's tools are not installed (%v): run `make deps` "+
			"(scripts/install-deps.sh copies %s and their dependencies into %s), or set %s",
			release, err, what, rel, env)
	}
	out, err := exec.Command("bash", filepath.Join(root, "scripts", "zk.sh"), "java").Output()
	if err != nil {
		t.Fatalf("finding OpenJDK 17 with scripts/zk.sh java: %v", exitDetail(err))
	}
	return KafkaTools{
		Java:  strings.TrimSpace(string(out)),
		Lib:   lib,
		Log4j: filepath.Join(root, "scripts", "kafka", "tools-log4j.properties"),
	}
}

// Command returns the command running class's main with args, with a
// small heap (the tools need little, and the machine is shared).
func (k KafkaTools) Command(ctx context.Context, class string, args ...string) *exec.Cmd {
	argv := append([]string{
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j.configuration=file:" + k.Log4j,
		"-cp", filepath.Join(k.Lib, "*"),
		class,
	}, args...)
	return exec.CommandContext(ctx, k.Java, argv...)
}

// Burrow returns the path of LinkedIn's Burrow (Debian package burrow,
// whose binary is /usr/bin/Burrow) or fails t.
func Burrow(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"Burrow", "burrow"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("Burrow not found on PATH: run `make deps` (installs the Debian package burrow)")
	return ""
}

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory (a test's package directory) holding this module's
// go.mod. It fails t outside the repository.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/tributary/tributary\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("not inside the tributary repository (no go.mod of github.com/tributary/tributary above the working directory)")
		}
		dir = parent
	}
}

// exitDetail adds a failed command's stderr to its error.
func exitDetail(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return errors.New(err.Error() + ": " + strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
