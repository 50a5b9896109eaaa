package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/partlog"
)

// alterreplicalogdirs.go serves AlterReplicaLogDirs (34): moving a local
// replica from one of this broker's log.dirs to another, as Kafka's
// future-replica protocol does. A mover copies the replica's batches,
// offsets and epochs as they are, into <dir>/<topic>-<p>.<id>-future (a
// name no scan takes for a partition), at most
// replica.alter.log.dirs.io.max.bytes.per.second, until it has caught up;
// then the reconciler swaps the copies: the partition stops serving for a
// moment, the tail written since is copied, the old directory is renamed
// <topic>-<p>.<id>-delete, the future one renamed <topic>-<p> and the old
// one deleted, and the partition is opened again from its new directory.
//
// Crash safety rests on those two renames (recoverLogDirMoves, run before
// the log dirs are scanned): a future directory next to a live
// <topic>-<p> is an unfinished copy and is deleted (the move is lost, the
// replica is whole where it was); a future directory whose <id>-delete
// twin exists and no <topic>-<p> is a finished copy whose swap was cut
// short: it becomes the partition; a lone -delete directory is removed.
// Either way the restarted broker holds exactly one good copy.
//
// A replica that does not exist yet has the dir remembered for when it is
// created (REPLICA_NOT_AVAILABLE, which Kafka's reassignment tool retries),
// as Kafka's preferred log dir. A log that cannot take the copy as it is
// (a compacted one with gaps) fails its move, logged; the replica stays.

const (
	futureDirSuffix = "-future"
	deleteDirSuffix = "-delete"
	// moveChunk bounds one read of the copy.
	moveChunk = 1 << 20
)

// logDirMoves tracks the moves in progress and the preferred dirs of
// replicas not created yet. Safe for concurrent use.
type logDirMoves struct {
	mu        sync.Mutex
	moves     map[partition.TopicPartition]*logDirMove
	preferred map[partition.TopicPartition]string
	// swaps carries caught-up moves to the reconciler.
	swaps chan *logDirMove
}

func newLogDirMoves() *logDirMoves {
	return &logDirMoves{moves: map[partition.TopicPartition]*logDirMove{}, preferred: map[partition.TopicPartition]string{}, swaps: make(chan *logDirMove)}
}

// logDirMove is one replica being copied to another log dir.
type logDirMove struct {
	tp     partition.TopicPartition
	target string // the log dir
	id     string // the future directory's unique part
	future string // the future directory
	cancel context.CancelFunc
	// swapped receives the swap's outcome from the reconciler.
	swapped chan error

	mu  sync.Mutex
	log partition.Log // the future log while copying; nil once closed
	lag int64
}

// futureDirName is Kafka's name of a future replica's directory.
func futureDirName(topic string, p int32, id string) string {
	return partitionDirName(topic, p) + "." + id + futureDirSuffix
}

// parseMovedDir splits <topic>-<p>.<id><suffix>.
func parseMovedDir(name, suffix string) (partDir, id string, ok bool) {
	rest, ok := strings.CutSuffix(name, suffix)
	i := strings.LastIndexByte(rest, '.')
	if !ok || i <= 0 {
		return "", "", false
	}
	if _, _, ok := parsePartitionDir(rest[:i]); !ok {
		return "", "", false
	}
	return rest[:i], rest[i+1:], rest[i+1:] != ""
}

func (b *Broker) handleAlterReplicaLogDirs(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	resp.SetVersion(req.Version)
	allowed := b.authorizeCluster(r, acl.OpAlter)
	byTopic := map[string]int{}
	for _, d := range req.Dirs {
		for _, rt := range d.Topics {
			i, ok := byTopic[rt.Topic]
			if !ok {
				i = len(resp.Topics)
				byTopic[rt.Topic] = i
				t := kmsg.NewAlterReplicaLogDirsResponseTopic()
				t.Topic = rt.Topic
				resp.Topics = append(resp.Topics, t)
			}
			for _, p := range rt.Partitions {
				sp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				sp.Partition = p
				switch {
				case !allowed:
					sp.ErrorCode = errClusterAuth.Code
				default:
					sp.ErrorCode = b.alterReplicaLogDir(d.Dir, rt.Topic, p)
				}
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
			}
		}
	}
	return kmsgReply{resp}, nil
}

// alterReplicaLogDir starts moving topic-p to dir, or notes dir for when
// the replica is created; it returns Kafka's error code.
func (b *Broker) alterReplicaLogDir(dir, topic string, p int32) int16 {
	i := slices.IndexFunc(b.cfg.LogDirs, func(d string) bool { return filepath.Clean(d) == filepath.Clean(dir) })
	if i < 0 {
		return kerr.LogDirNotFound.Code
	}
	target := filepath.Clean(b.cfg.LogDirs[i])
	tp := partition.TopicPartition{Topic: topic, Partition: p}
	m := b.logDirMoves
	part := b.partitions.Replica(topic, p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if part == nil {
		m.preferred[tp] = target
		return kerr.ReplicaNotAvailable.Code
	}
	if cur := m.moves[tp]; cur != nil {
		if cur.target == target {
			return 0
		}
		cur.cancel() // a new destination replaces the move under way
	}
	if filepath.Dir(part.Dir()) == target {
		return 0
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	ctx, cancel := context.WithCancel(b.shutdownCtx)
	mv := &logDirMove{tp: tp, target: target, id: hex.EncodeToString(id), cancel: cancel, swapped: make(chan error, 1)}
	mv.future = filepath.Join(target, futureDirName(topic, p, mv.id))
	m.moves[tp] = mv
	b.wg.Add(1)
	go b.runLogDirMove(ctx, mv)
	b.logger.Info("moving replica to another log dir", "topic", topic, "partition", p, "from", filepath.Dir(part.Dir()), "to", target)
	return 0
}

// preferredLogDir is the log dir AlterReplicaLogDirs named for a replica
// before it existed ("" if none); it is forgotten once used.
func (b *Broker) preferredLogDir(topic string, p int32) string {
	m := b.logDirMoves
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.preferred[partition.TopicPartition{Topic: topic, Partition: p}]
	delete(m.preferred, partition.TopicPartition{Topic: topic, Partition: p})
	return d
}

// futureReplicas lists the moves under way, for DescribeLogDirs.
func (b *Broker) futureReplicas() []*logDirMove {
	m := b.logDirMoves
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*logDirMove
	for _, mv := range m.moves {
		out = append(out, mv)
	}
	return out
}

// progress returns the future log's size and its lag behind the current
// one, in offsets; false once the future log is closed.
func (mv *logDirMove) progress() (size, lag int64, ok bool) {
	mv.mu.Lock()
	defer mv.mu.Unlock()
	if mv.log == nil {
		return 0, 0, false
	}
	return mv.log.Size(), mv.lag, true
}

// runLogDirMove copies until the future log has caught up, hands the move
// to the reconciler for the swap, and cleans up after a failure.
func (b *Broker) runLogDirMove(ctx context.Context, mv *logDirMove) {
	defer b.wg.Done()
	err := b.copyToFuture(ctx, mv)
	if err == nil {
		select {
		case b.logDirMoves.swaps <- mv:
			err = <-mv.swapped
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	m := b.logDirMoves
	m.mu.Lock()
	if m.moves[mv.tp] == mv {
		delete(m.moves, mv.tp)
	}
	m.mu.Unlock()
	mv.cancel()
	if err == nil {
		b.logger.Info("replica moved to another log dir", "topic", mv.tp.Topic, "partition", mv.tp.Partition, "dir", mv.target)
		return
	}
	mv.closeFuture()
	if rmErr := os.RemoveAll(mv.future); rmErr != nil {
		b.logger.Error("removing a future replica", "dir", mv.future, "err", rmErr)
	}
	if !errors.Is(err, context.Canceled) {
		b.logger.Error("moving replica to another log dir failed; it stays where it is", "topic", mv.tp.Topic,
			"partition", mv.tp.Partition, "dir", mv.target, "err", err)
	}
}

func (mv *logDirMove) closeFuture() {
	mv.mu.Lock()
	defer mv.mu.Unlock()
	if mv.log != nil {
		_ = mv.log.Close()
		mv.log = nil
	}
}

// copyToFuture creates the future log and copies into it until a read
// reaches the current log's end. It never catches up while the partition
// grows faster than replica.alter.log.dirs.io.max.bytes.per.second, as in
// Kafka.
func (b *Broker) copyToFuture(ctx context.Context, mv *logDirMove) error {
	part := b.partitions.Replica(mv.tp.Topic, mv.tp.Partition)
	if part == nil {
		return fmt.Errorf("%w: the replica is gone", context.Canceled)
	}
	l, err := b.openLog(mv.future, part.Settings())
	if err != nil {
		return err
	}
	mv.mu.Lock()
	mv.log = l
	mv.mu.Unlock()
	throttle := newIOThrottle(0)
	for missing := 0; ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		part = b.partitions.Replica(mv.tp.Topic, mv.tp.Partition)
		if part == nil {
			// Reopened (a storage setting) or gone: look again shortly.
			if missing++; missing > 100 {
				return fmt.Errorf("%w: the replica is gone", context.Canceled)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
				continue
			}
		}
		missing = 0
		throttle.setRate(float64(b.dynamic().settings.alterLogDirsRate))
		n, err := copyBatches(part.Log(), l)
		mv.mu.Lock()
		mv.lag = max(part.Log().EndOffset()-l.EndOffset(), 0)
		mv.mu.Unlock()
		switch {
		case errors.Is(err, partlog.ErrClosed):
			continue // the partition is being reopened
		case err != nil:
			return err
		case n < moveChunk/2:
			// The read reached the end: what arrives from now on is
			// copied by the swap, with the partition stopped.
			return nil
		}
		if err := throttle.wait(ctx, n); err != nil {
			return err
		}
	}
}

// copyBatches appends to dst the next batches of src after dst's end,
// restarting dst at src's log start when src no longer has them (retention,
// DeleteRecords) or has truncated below dst's end (a leader change). It
// returns the bytes copied.
func copyBatches(src, dst partition.Log) (int64, error) {
	if dst.EndOffset() > src.EndOffset() || dst.EndOffset() < src.StartOffset() || dst.EndOffset() == 0 && src.StartOffset() > 0 {
		if err := dst.TruncateFullyAndStartAt(src.StartOffset()); err != nil {
			return 0, err
		}
	}
	if dst.EndOffset() == src.EndOffset() {
		return 0, nil
	}
	v, err := src.Read(dst.EndOffset(), moveChunk)
	if err != nil {
		return 0, err
	}
	defer v.Release()
	data, err := v.Bytes()
	if err != nil || len(data) == 0 {
		return 0, err
	}
	if _, err := dst.AppendReplica(data); err != nil {
		return 0, fmt.Errorf("copying offsets from %d: %w", dst.EndOffset(), err)
	}
	return int64(len(data)), nil
}

// swapLogDir finishes mv in the reconciler: the partition stops serving,
// the tail is copied, the directories are renamed, and the partition
// opens again from its new directory.
func (b *Broker) swapLogDir(mv *logDirMove) error {
	served := b.replication.Slots(mv.tp.Topic)
	if int(mv.tp.Partition) >= len(served) || served[mv.tp.Partition] == nil {
		return fmt.Errorf("%w: the replica is gone", context.Canceled)
	}
	old := served[mv.tp.Partition]
	slots := slices.Clone(served)
	slots[mv.tp.Partition] = nil
	b.replication.Publish(mv.tp.Topic, slots)
	b.replication.Release(old, false)
	reopen := func() {
		snap := b.metadata()
		if ct, ok := snap.Topics[mv.tp.Topic]; ok {
			b.reconcileTopic(ct)
		}
	}
	if err := b.finishFuture(mv, old); err != nil {
		reopen() // from the old directory, untouched
		return err
	}
	trash := old.Dir() + "." + mv.id + deleteDirSuffix
	current := filepath.Join(mv.target, partitionDirName(mv.tp.Topic, mv.tp.Partition))
	if err := os.Rename(old.Dir(), trash); err != nil {
		reopen()
		return err
	}
	if err := syncDir(filepath.Dir(old.Dir())); err != nil {
		b.logger.Warn("syncing a log dir", "dir", filepath.Dir(old.Dir()), "err", err)
	}
	if err := os.Rename(mv.future, current); err != nil {
		// Put the old copy back; the next start would do the same.
		if backErr := os.Rename(trash, old.Dir()); backErr != nil {
			b.logger.Error("restoring a replica's directory", "dir", old.Dir(), "err", backErr)
		}
		reopen()
		return err
	}
	if err := syncDir(mv.target); err != nil {
		b.logger.Warn("syncing a log dir", "dir", mv.target, "err", err)
	}
	b.mu.Lock()
	b.onDisk[mv.tp.Topic][mv.tp.Partition] = current
	b.mu.Unlock()
	if err := os.RemoveAll(trash); err != nil {
		b.logger.Error("deleting a moved replica's old directory", "dir", trash, "err", err)
	}
	reopen()
	return nil
}

// finishFuture copies what old received since the mover's last pass,
// moves the future log's start to old's, and closes the future log with
// everything on disk.
func (b *Broker) finishFuture(mv *logDirMove, old *partition.Replica) error {
	src, err := b.openLog(old.Dir(), old.Settings())
	if err != nil {
		return err
	}
	defer src.Close()
	mv.mu.Lock()
	dst := mv.log
	mv.mu.Unlock()
	if dst == nil {
		return errors.New("the future log is closed")
	}
	for dst.EndOffset() != src.EndOffset() || dst.StartOffset() > src.StartOffset() {
		n, err := copyBatches(src, dst)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	if d, ok := dst.(partition.RecordDeleter); ok && dst.StartOffset() < src.StartOffset() {
		if _, err := d.DeleteRecordsBefore(src.StartOffset()); err != nil {
			return err
		}
	}
	if dst.EndOffset() != src.EndOffset() || dst.StartOffset() != src.StartOffset() {
		return fmt.Errorf("the future log holds [%d, %d), the replica [%d, %d)", dst.StartOffset(), dst.EndOffset(), src.StartOffset(), src.EndOffset())
	}
	if err := dst.Flush(); err != nil {
		return err
	}
	mv.closeFuture()
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// recoverLogDirMoves settles the moves a crash interrupted (see the file
// comment), before the log dirs are scanned for partitions.
func recoverLogDirMoves(logDirs []string) error {
	type entry struct{ dir, name string }
	var futures, trashes []entry
	current := map[string]bool{}
	for _, d := range logDirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			return fmt.Errorf("broker: reading log dir: %w", err)
		}
		for _, e := range entries {
			switch {
			case !e.IsDir():
			case strings.HasSuffix(e.Name(), futureDirSuffix):
				futures = append(futures, entry{d, e.Name()})
			case strings.HasSuffix(e.Name(), deleteDirSuffix):
				trashes = append(trashes, entry{d, e.Name()})
			default:
				current[e.Name()] = true
			}
		}
	}
	for _, f := range futures {
		partDir, id, ok := parseMovedDir(f.name, futureDirSuffix)
		if !ok {
			continue
		}
		finished := slices.ContainsFunc(trashes, func(t entry) bool { return t.name == partDir+"."+id+deleteDirSuffix })
		path := filepath.Join(f.dir, f.name)
		if finished && !current[partDir] {
			if err := os.Rename(path, filepath.Join(f.dir, partDir)); err != nil {
				return fmt.Errorf("broker: finishing the move of %s: %w", partDir, err)
			}
			current[partDir] = true
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("broker: removing an unfinished future replica: %w", err)
		}
	}
	for _, t := range trashes {
		partDir, _, ok := parseMovedDir(t.name, deleteDirSuffix)
		if !ok {
			continue
		}
		if !current[partDir] {
			// No copy took its place: it is still the partition.
			if err := os.Rename(filepath.Join(t.dir, t.name), filepath.Join(t.dir, partDir)); err != nil {
				return fmt.Errorf("broker: restoring %s: %w", partDir, err)
			}
			current[partDir] = true
			continue
		}
		if err := os.RemoveAll(filepath.Join(t.dir, t.name)); err != nil {
			return fmt.Errorf("broker: removing a moved replica's old directory: %w", err)
		}
	}
	return nil
}
