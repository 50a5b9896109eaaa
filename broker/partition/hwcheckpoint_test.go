package partition

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

func TestHWCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	hws := map[TopicPartition]int64{{"b", 1}: 7, {"a", 10}: 0, {"a", 2}: 42}
	if err := writeHWCheckpoint(dir, hws); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, hwCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's format, sorted by topic then partition.
	if want := "0\n3\na 2 42\na 10 0\nb 1 7\n"; string(data) != want {
		t.Fatalf("checkpoint file %q, want %q", data, want)
	}
	got, err := readHWCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(hws) {
		t.Fatalf("read %v, want %v", got, hws)
	}
	for k, v := range hws {
		if got[k] != v {
			t.Fatalf("read %v, want %v", got, hws)
		}
	}
}

func TestHWCheckpointMissingAndMalformed(t *testing.T) {
	empty := t.TempDir()
	if got, err := readHWCheckpoint(empty); err != nil || len(got) != 0 {
		t.Fatalf("missing checkpoint: %v, %v; want empty", got, err)
	}
	for _, bad := range []string{"1\n0\n", "0\n", "0\nx\n", "0\n1\na 0\n", "0\n2\na 0 1\n", "0\n1\na x 1\n"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, hwCheckpointFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readHWCheckpoint(dir); err == nil {
			t.Errorf("checkpoint %q read without error", bad)
		}
	}
	// A malformed directory is skipped, the others are loaded.
	good, bad := t.TempDir(), t.TempDir()
	if err := writeHWCheckpoint(good, map[TopicPartition]int64{{"t", 0}: 5}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, hwCheckpointFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := LoadHWCheckpoints([]string{bad, good}, slog.New(slog.DiscardHandler))
	if len(got) != 1 || got[TopicPartition{"t", 0}] != 5 {
		t.Fatalf("loaded %v, want t-0 at 5", got)
	}
}
