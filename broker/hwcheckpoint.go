package broker

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
func readHWCheckpoint(dir string) (map[topicPart]int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, hwCheckpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[topicPart]int64{}, nil
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
	out := make(map[topicPart]int64, n)
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
		out[topicPart{topic: f[0], p: int32(p)}] = hw
	}
	if len(out) != n {
		return nil, bad(fmt.Sprintf("%d entries, header says %d", len(out), n))
	}
	return out, nil
}

// writeHWCheckpoint replaces a log directory's checkpoint atomically.
func writeHWCheckpoint(dir string, hws map[topicPart]int64) error {
	keys := make([]topicPart, 0, len(hws))
	for k := range hws {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].p < keys[j].p
	})
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(keys))
	for _, k := range keys {
		fmt.Fprintf(&buf, "%s %d %d\n", k.topic, k.p, hws[k])
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

// checkpointHighWatermarks writes every log directory's checkpoint from the
// open replicas. Only one goroutine calls it at a time (the checkpointer,
// then Close).
func (b *Broker) checkpointHighWatermarks() {
	byDir := map[string]map[topicPart]int64{}
	for _, d := range b.cfg.LogDirs {
		byDir[filepath.Clean(d)] = map[topicPart]int64{}
	}
	for _, p := range b.allPartitions() {
		d := filepath.Dir(p.dir)
		if byDir[d] == nil {
			continue
		}
		byDir[d][topicPart{topic: p.topic, p: p.index}] = p.highWatermark()
	}
	for d, hws := range byDir {
		if err := writeHWCheckpoint(d, hws); err != nil {
			b.res.logs.log(slog.LevelWarn, "hw-checkpoint", "writing the high watermark checkpoint", "dir", d, "err", err)
		}
	}
}

// runHWCheckpointer checkpoints every hwCheckpointInterval until shutdown.
func (b *Broker) runHWCheckpointer() {
	defer b.wg.Done()
	t := time.NewTicker(hwCheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.checkpointHighWatermarks()
		case <-b.shutdownCtx.Done():
			return
		}
	}
}

// loadHWCheckpoints reads every log directory's checkpoint at start.
func (b *Broker) loadHWCheckpoints() map[topicPart]int64 {
	out := map[topicPart]int64{}
	for _, d := range b.cfg.LogDirs {
		hws, err := readHWCheckpoint(d)
		if err != nil {
			b.logger.Warn("ignoring the high watermark checkpoint; replicas start from zero", "err", err)
			continue
		}
		for k, v := range hws {
			out[k] = v
		}
	}
	return out
}
