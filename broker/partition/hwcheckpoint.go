package partition

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// hwCheckpointFile is Kafka's replication-offset-checkpoint: the high
// watermark of every partition in one log directory, so that a restarted
// replica does not serve consumers less than was committed, nor more.
// Format (frozen, Kafka's): "0\n<count>\n" then "<topic> <partition> <hw>\n"
// per partition.
const hwCheckpointFile = "replication-offset-checkpoint"

// hwCheckpointInterval is Kafka's replica.high.watermark.checkpoint.interval.ms.
const hwCheckpointInterval = 5 * time.Second

// readHWCheckpoint reads a log directory's checkpoint; a missing file is
// empty, a malformed one an error (the caller starts from zero).
func readHWCheckpoint(dir string) (map[TopicPartition]int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, hwCheckpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	bad := func(why string) error {
		return fmt.Errorf("broker: %s in %s: %s", hwCheckpointFile, dir, why)
	}
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "0" {
		return nil, bad("unknown version")
	}
	if !sc.Scan() {
		return nil, bad("no count")
	}
	n, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || n < 0 {
		return nil, bad("bad count")
	}
	out := make(map[TopicPartition]int64, n)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			return nil, bad("bad line " + strconv.Quote(sc.Text()))
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		hw, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, bad("bad line " + strconv.Quote(sc.Text()))
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = hw
	}
	if len(out) != n {
		return nil, bad(fmt.Sprintf("%d entries, header says %d", len(out), n))
	}
	return out, nil
}

// writeHWCheckpoint replaces a log directory's checkpoint atomically.
func writeHWCheckpoint(dir string, hws map[TopicPartition]int64) error {
	keys := make([]TopicPartition, 0, len(hws))
	for k := range hws {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Topic != keys[j].Topic {
			return keys[i].Topic < keys[j].Topic
		}
		return keys[i].Partition < keys[j].Partition
	})
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(keys))
	for _, k := range keys {
		fmt.Fprintf(&buf, "%s %d %d\n", k.Topic, k.Partition, hws[k])
	}
	tmp := filepath.Join(dir, hwCheckpointFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, hwCheckpointFile))
}

// CheckpointHighWatermarks writes every log directory's checkpoint from
// the open replicas. Only one goroutine calls it at a time (the
// checkpointer, then the broker's Close).
func (m *Manager) CheckpointHighWatermarks() {
	byDir := map[string]map[TopicPartition]int64{}
	for _, d := range m.d.LogDirs {
		byDir[filepath.Clean(d)] = map[TopicPartition]int64{}
	}
	for _, p := range m.All() {
		d := filepath.Dir(p.dir)
		if byDir[d] == nil {
			continue
		}
		byDir[d][TopicPartition{Topic: p.topic, Partition: p.index}] = p.HighWatermark()
	}
	for d, hws := range byDir {
		if err := writeHWCheckpoint(d, hws); err != nil {
			m.d.RateLog(slog.LevelWarn, "hw-checkpoint", "writing the high watermark checkpoint", "dir", d, "err", err)
		}
	}
}

// RunHWCheckpointer checkpoints every hwCheckpointInterval until shutdown;
// the caller has counted it in Deps.WG.
func (m *Manager) RunHWCheckpointer() {
	defer m.d.WG.Done()
	t := time.NewTicker(hwCheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			m.CheckpointHighWatermarks()
		case <-m.d.Shutdown.Done():
			return
		}
	}
}

// LoadHWCheckpoints reads every log directory's checkpoint at start; a
// malformed one is logged and skipped (its replicas start from zero).
func LoadHWCheckpoints(logDirs []string, logger *slog.Logger) map[TopicPartition]int64 {
	out := map[TopicPartition]int64{}
	for _, d := range logDirs {
		hws, err := readHWCheckpoint(d)
		if err != nil {
			logger.Warn("ignoring the high watermark checkpoint; replicas start from zero", "err", err)
			continue
		}
		for k, v := range hws {
			out[k] = v
		}
	}
	return out
}
