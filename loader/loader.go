package loader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/icetable"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/schema"
)

// Loader loads the configured topics into the output file system. Run
// and Serve must not be called concurrently on one Loader.
type Loader struct {
	cfg       Config
	log       *slog.Logger
	fsys      filesys.FS
	base      string
	format    fileFormat
	topics    *regexp.Regexp
	kcl       *kgo.Client
	adm       *kadm.Client
	schemas   *schemaCache
	audit     *auditPublisher
	owners    *owners
	metrics   *metrics
	progress  *Progress
	runID     string
	crashSeen atomic.Int64
	// layout is the topic layout the configuration writes; columns
	// encodes its stored Kafka columns (nil without any).
	layout  hours.Layout
	columns *hours.Encoder
	// layouts holds the topics whose partitioning marker was checked.
	layouts sync.Map
	// ice is the catalog of table.format=iceberg (nil for Avro files).
	ice *icetable.Catalog
	// iceCommits holds a *sync.Mutex per topic: its Appends, one at a time.
	iceCommits sync.Map
}

// New connects to the output file system, the cluster, the registry and,
// with zookeeper.connect, ZooKeeper.
func New(ctx context.Context, cfg Config) (*Loader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fill()
	if cfg.Instance == "" {
		host, _ := os.Hostname()
		cfg.Instance = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	l := &Loader{cfg: cfg, log: cfg.Logger.With("job", cfg.Name), metrics: newMetrics(cfg.Registerer),
		progress: &Progress{}}
	codec, _ := parseCodec(cfg.Codec)
	l.format = avroFormat{codec: codec}
	l.layout = cfg.layout()
	if l.layout.Stored.Any() {
		enc, err := l.layout.Stored.NewEncoder()
		if err != nil {
			return nil, err
		}
		l.columns = enc
	}
	l.topics = regexp.MustCompile("^(?:" + cfg.Topics + ")$")
	fsys, base, err := filesys.OpenWith(ctx, cfg.OutputURI, cfg.HDFS.WithLogger(cfg.Logger))
	if err != nil {
		return nil, fmt.Errorf("output.uri: %w", err)
	}
	l.fsys, l.base = fsys, base
	rc := cfg.Registry
	rc.URL = cfg.RegistryURL
	reg, err := serde.NewRegistryClient(rc)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("schema.registry.url: %w", err)
	}
	l.schemas = &schemaCache{reg: reg, stored: l.layout.Stored, m: map[schema.ID]*writerSchema{}}
	l.kcl, err = network.NewClient(network.ClientConfig{Brokers: cfg.Brokers, ClientID: cfg.ClientID}.Secured(cfg.Security))
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("bootstrap.servers: %w", err)
	}
	l.adm = kadm.NewClient(l.kcl)
	if !cfg.AuditDisable {
		l.audit = &auditPublisher{cfg: cfg}
	}
	if cfg.TableFormat == FormatIceberg {
		// With its defaults filled in (the namespace names the tables).
		if err := l.cfg.Iceberg.Validate(); err != nil {
			l.Close()
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		if l.ice, err = icetable.Open(ctx, l.cfg.Iceberg); err != nil {
			l.Close()
			return nil, fmt.Errorf("iceberg catalog: %w", err)
		}
		l.metrics.registerIcebergRetries(l.ice.Retries)
	}
	if cfg.ZooKeeperConnect != "" {
		if l.owners, err = connectOwners(ctx, cfg); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Progress returns the live progress of the loader.
func (l *Loader) Progress() *Progress { return l.progress }

// OnCommit sets a function called after every partition commit.
func (l *Loader) OnCommit(f func(CommitInfo)) {
	l.progress.mu.Lock()
	l.progress.onCommit = f
	l.progress.mu.Unlock()
}

// Close releases every connection (and, with ZooKeeper, the partitions).
func (l *Loader) Close() error {
	if l.owners != nil {
		l.owners.close()
	}
	if l.audit != nil {
		l.audit.close()
	}
	if l.kcl != nil {
		l.kcl.Close()
	}
	if l.ice != nil {
		l.ice.Close()
	}
	if l.fsys != nil {
		return l.fsys.Close()
	}
	return nil
}

type topicPartition struct {
	topic string
	p     int32
}

// Run loads every partition of the configured topics from its committed
// offset up to its end offset as of the start of the run, commits, and
// returns what it did. With ZooKeeper, the processes of the job split the
// partitions and each run returns once every partition is loaded, by it
// or by a peer (a killed peer's partitions are taken over once its
// session expires).
func (l *Loader) Run(ctx context.Context) (Summary, error) {
	start := time.Now()
	var b [6]byte
	_, _ = rand.Read(b[:])
	l.runID = time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
	r0, by0, e0, f0, _, _ := l.progress.Snapshot()
	d0, fb0 := l.progress.dups.Load(), l.progress.fileBytes.Load()
	done, err := l.run(ctx)
	r1, by1, e1, f1, _, _ := l.progress.Snapshot()
	sum := Summary{Records: r1 - r0, RecordBytes: by1 - by0, FileBytes: l.progress.fileBytes.Load() - fb0,
		Errors: e1 - e0, Files: f1 - f0, Duplicates: l.progress.dups.Load() - d0,
		Partitions: int64(done), Seconds: since(start)}
	return sum, err
}

func (l *Loader) run(ctx context.Context) (int, error) {
	parts, err := l.partitions(ctx)
	if err != nil {
		return 0, err
	}
	// Before anything of this run commits, so that a partition without a
	// commit holds CommittedThrough (and readiness) back.
	counts := map[string]int32{}
	for _, tp := range parts {
		counts[tp.topic] = max(counts[tp.topic], tp.p+1)
	}
	for topic, n := range counts {
		if err := recordPartitions(l.fsys, l.base, l.cfg.Name, topic, n, l.runID); err != nil {
			return 0, fmt.Errorf("record the partitions of %s: %w", topic, err)
		}
	}
	l.progress.total.Store(int64(len(parts)))
	l.progress.done.Store(0)
	// The run's end: the high watermark, or under read_committed the last
	// stable offset (nothing of an open transaction is read).
	listEnds := l.adm.ListEndOffsets
	if l.cfg.IsolationLevel == ReadCommitted {
		listEnds = l.adm.ListCommittedOffsets
	}
	ends, err := listEnds(ctx, topicsOf(parts)...)
	if err != nil {
		return 0, fmt.Errorf("list end offsets: %w", err)
	}
	if err := ends.Error(); err != nil {
		return 0, fmt.Errorf("list end offsets: %w", err)
	}
	endTime := time.Now()
	if l.owners == nil {
		return len(parts), l.load(ctx, parts, ends, endTime)
	}
	members, rank, err := l.owners.members(ctx, l.cfg.ScaleMembers, l.cfg.ScaleWait)
	if err != nil {
		return 0, err
	}
	l.log.Info("splitting partitions", "members", len(members), "rank", rank, "partitions", len(parts))
	loaded := map[topicPartition]bool{}
	// First this process's share (every n-th partition), then whatever is
	// free, then wait for partitions held by others and check them.
	var mine []topicPartition
	for i, tp := range parts {
		if rank >= 0 && i%len(members) == rank {
			mine = append(mine, tp)
		}
	}
	for pass := 0; ; pass++ {
		var claimed, held []topicPartition
		candidates := parts
		if pass == 0 {
			candidates = mine
		}
		for _, tp := range candidates {
			if loaded[tp] {
				continue
			}
			ok, err := l.owners.claim(ctx, tp.topic, tp.p)
			if err != nil {
				return len(loaded), err
			}
			if ok {
				claimed = append(claimed, tp)
			} else {
				held = append(held, tp)
			}
		}
		if len(claimed) > 0 {
			l.log.Info("loading partitions", "count", len(claimed))
			err := l.load(ctx, claimed, ends, endTime)
			for _, tp := range claimed {
				if err == nil {
					loaded[tp] = true
				}
				_ = l.owners.release(context.WithoutCancel(ctx), tp.topic, tp.p)
			}
			if err != nil {
				return len(loaded), err
			}
			continue
		}
		if pass == 0 {
			continue
		}
		if len(held) == 0 {
			return len(loaded), nil
		}
		if err := l.owners.waitFree(ctx, held[0].topic, held[0].p); err != nil {
			return len(loaded), err
		}
	}
}

// Serve loads continuously: a Run every CommitInterval until ctx ends.
func (l *Loader) Serve(ctx context.Context) error {
	for {
		sum, err := l.Run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrNoTopics) {
			l.log.Warn("nothing to load; checking again next cycle", "err", err)
		} else if err != nil {
			l.log.Error("load cycle failed; retrying", "err", err)
		} else {
			l.log.Debug("load cycle", "records", sum.Records, "files", sum.Files, "errors", sum.Errors)
		}
		select {
		case <-time.After(l.cfg.CommitInterval):
		case <-ctx.Done():
			return nil
		}
	}
}

// partitions lists the partitions of the matching topics, sorted.
func (l *Loader) partitions(ctx context.Context) ([]topicPartition, error) {
	md, err := l.adm.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	var out []topicPartition
	var others []string
	for _, t := range md.Topics.Sorted() {
		if strings.HasPrefix(t.Topic, "__") {
			continue
		}
		if !l.topics.MatchString(t.Topic) {
			others = append(others, t.Topic)
			continue
		}
		if t.Err != nil {
			return nil, fmt.Errorf("metadata of %s: %w", t.Topic, t.Err)
		}
		for _, p := range t.Partitions.Sorted() {
			out = append(out, topicPartition{t.Topic, p.Partition})
		}
	}
	if len(out) == 0 {
		return nil, noTopics(l.cfg.Topics, others)
	}
	return out, nil
}

// noTopics is ErrNoTopics naming the expression and up to ten of the
// topics that exist.
func noTopics(expr string, existing []string) error {
	if len(existing) == 0 {
		return fmt.Errorf("%w: topics=%q, and the cluster has no topics", ErrNoTopics, expr)
	}
	const show = 10
	list := strings.Join(existing[:min(len(existing), show)], ", ")
	if len(existing) > show {
		list += fmt.Sprintf(" and %d more", len(existing)-show)
	}
	return fmt.Errorf("%w: topics=%q (a regular expression over whole topic names); the cluster has %s", ErrNoTopics, expr, list)
}

func topicsOf(parts []topicPartition) []string {
	var out []string
	for _, tp := range parts {
		if !slices.Contains(out, tp.topic) {
			out = append(out, tp.topic)
		}
	}
	return out
}

func (l *Loader) checkOwnership(topic string, p int32) error {
	if l.owners == nil {
		return nil
	}
	if err := l.owners.check(); err != nil {
		return fmt.Errorf("%s/%d: %w", topic, p, err)
	}
	return nil
}

// load recovers the given (owned) partitions and loads each up to its end
// offset in ends.
func (l *Loader) load(ctx context.Context, parts []topicPartition, ends kadm.ListedOffsets, endTime time.Time) error {
	if len(parts) == 0 {
		return nil
	}
	starts, err := l.adm.ListStartOffsets(ctx, topicsOf(parts)...)
	if err != nil {
		return fmt.Errorf("list start offsets: %w", err)
	}
	pls := map[topicPartition]*partLoad{}
	consume := map[string]map[int32]kgo.Offset{}
	for _, tp := range parts {
		pl, err := l.recoverPartition(ctx, tp.topic, tp.p)
		if err != nil {
			return fmt.Errorf("recover %s/%d: %w", tp.topic, tp.p, err)
		}
		end, ok := ends.Lookup(tp.topic, tp.p)
		if !ok || end.Err != nil {
			return fmt.Errorf("end offset of %s/%d unknown: %v", tp.topic, tp.p, end.Err)
		}
		pl.end, pl.endTime = end.Offset, endTime
		if st, ok := starts.Lookup(tp.topic, tp.p); ok && st.Err == nil && pl.next < st.Offset {
			if pl.prev != nil {
				l.log.Warn("committed offset below the log start: records were deleted before they were loaded",
					"topic", tp.topic, "partition", tp.p, "committed", pl.next, "log_start", st.Offset, "lost", st.Offset-pl.next)
			}
			pl.next = st.Offset
		}
		if pl.next >= pl.end {
			if err := pl.commit(ctx, true); err != nil {
				return fmt.Errorf("commit %s/%d: %w", tp.topic, tp.p, err)
			}
			l.progress.done.Add(1)
			continue
		}
		pls[tp] = pl
		if consume[tp.topic] == nil {
			consume[tp.topic] = map[int32]kgo.Offset{}
		}
		consume[tp.topic][tp.p] = kgo.NewOffset().At(pl.next)
	}
	if len(pls) == 0 {
		return nil
	}
	isolation := kgo.ReadUncommitted()
	if l.cfg.IsolationLevel == ReadCommitted {
		isolation = kgo.ReadCommitted()
	}
	// Control records (transaction markers) are kept: they take offsets,
	// so a partition ending in one reaches its end offset only by them.
	cl, err := network.NewClient(network.ClientConfig{Brokers: l.cfg.Brokers, ClientID: l.cfg.ClientID}.Secured(l.cfg.Security), kgo.ConsumePartitions(consume),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(8<<20), kgo.FetchIsolationLevel(isolation), kgo.KeepControlRecords())
	if err != nil {
		return err
	}
	defer cl.Close()
	var commits sync.WaitGroup
	commitErrs := make(chan error, len(pls))
	defer func() {
		for _, pl := range pls {
			pl.abort()
		}
	}()
	err = l.consume(ctx, cl, pls, &commits, commitErrs)
	commits.Wait()
	close(commitErrs)
	if err != nil {
		return err
	}
	return <-commitErrs // the first, or nil
}

// consume reads the partitions of pls up to their end offsets, committing
// as it goes; commits of finished partitions run on goroutines counted in
// commits, reporting failures on commitErrs.
func (l *Loader) consume(ctx context.Context, cl *kgo.Client, pls map[topicPartition]*partLoad, commits *sync.WaitGroup, commitErrs chan error) error {
	// Partitions stopped by a schema type change (table.format=iceberg):
	// the others go on, and the run fails naming them at the end.
	var blocked []error
	for len(pls) > 0 {
		select {
		case err := <-commitErrs:
			return err
		default:
		}
		pollCtx, cancel := context.WithTimeout(ctx, fetchStall)
		fetches := cl.PollFetches(pollCtx)
		stalled := pollCtx.Err() != nil
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		if stalled && fetches.NumRecords() == 0 {
			// Every end offset was below the high watermark when it was
			// listed, so a fetch has had records to return all along:
			// end this run with what is known rather than wait for ever;
			// the next run lists the ends again (Serve retries).
			return fmt.Errorf("%w: no records for %v from %s", ErrFetchStalled, fetchStall, stalledAt(pls))
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		// Each partition's records are loaded on their own goroutine
		// (validation and block compression are the loader's CPU work, and
		// partitions share nothing until their commit), in offset order
		// within the partition.
		// A partition can come in more than one fetch of a poll (kgo visits
		// a topic once per fetch it is spread across): its records are
		// gathered into one work item, in the order they came, so that no
		// two goroutines ever load the same partition.
		var work []fetched
		at := map[topicPartition]int{}
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			tp := topicPartition{fp.Topic, fp.Partition}
			pl := pls[tp]
			if pl == nil || len(fp.Records) == 0 {
				return
			}
			if i, ok := at[tp]; ok {
				work[i].records = append(slices.Clip(work[i].records), fp.Records...)
				return
			}
			at[tp] = len(work)
			work = append(work, fetched{tp: tp, pl: pl, records: fp.Records})
		})
		if err := parallelN(len(work), runtime.GOMAXPROCS(0), func(i int) error {
			return l.loadFetched(ctx, &work[i])
		}); err != nil {
			return err
		}
		for _, w := range work {
			if w.blocked != nil {
				delete(pls, w.tp)
				cl.RemoveConsumePartitions(map[string][]int32{w.tp.topic: {w.tp.p}})
				w.pl.abort()
				l.log.Error("partition stopped: its table cannot take the schema; the next run starts again from its last commit",
					"topic", w.tp.topic, "partition", w.tp.p, "err", w.blocked)
				blocked = append(blocked, w.blocked)
				continue
			}
			if !w.done {
				continue
			}
			// The partition is done: commit it beside the loop, so that its
			// round trips overlap the other partitions' work.
			delete(pls, w.tp)
			cl.RemoveConsumePartitions(map[string][]int32{w.tp.topic: {w.tp.p}})
			commits.Add(1)
			go func(tp topicPartition, pl *partLoad) {
				defer commits.Done()
				if err := pl.commit(ctx, true); err != nil {
					pl.abort()
					commitErrs <- fmt.Errorf("commit %s/%d: %w", tp.topic, tp.p, err)
					return
				}
				l.progress.done.Add(1)
				l.log.Info("partition loaded", "topic", tp.topic, "partition", tp.p, "next_offset", pl.next)
			}(w.tp, w.pl)
		}
	}
	return errors.Join(blocked...)
}

// fetchStall bounds a poll that returns nothing while partitions are still
// short of the end offsets listed at the start of the run.
const fetchStall = time.Minute

// stalledAt names the partitions still loading, with their next and end
// offsets, sorted.
func stalledAt(pls map[topicPartition]*partLoad) string {
	var parts []string
	for tp, pl := range pls {
		parts = append(parts, fmt.Sprintf("%s/%d at %d of %d", tp.topic, tp.p, pl.next, pl.end))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// fetched is one partition's records of a poll; done is set once the
// partition reached its end offset, blocked when its Iceberg table cannot
// take a record's schema (icetable.ErrTypeChange).
type fetched struct {
	tp      topicPartition
	pl      *partLoad
	records []*kgo.Record
	done    bool
	blocked error
}

// loadFetched adds a partition's fetched records up to its end offset,
// committing every CommitRecords.
func (l *Loader) loadFetched(ctx context.Context, w *fetched) error {
	pl := w.pl
	for _, r := range w.records {
		if r.Offset < pl.next || r.Offset >= pl.end {
			continue
		}
		if r.Attrs.IsControl() {
			pl.skip(r)
		} else if err := pl.add(ctx, r); err != nil {
			err = fmt.Errorf("%s/%d offset %d: %w", w.tp.topic, w.tp.p, r.Offset, err)
			if errors.Is(err, icetable.ErrTypeChange) {
				w.blocked = err
				return nil
			}
			return err
		}
		if pl.next >= pl.end {
			w.done = true
			return nil
		}
		if pl.next-pl.first >= l.cfg.CommitRecords {
			if err := pl.commit(ctx, false); err != nil {
				return fmt.Errorf("commit %s/%d: %w", w.tp.topic, w.tp.p, err)
			}
		}
	}
	return nil
}

// auditPublisher publishes committed manifests' events to the audit topic.
type auditPublisher struct {
	cfg Config
	mu  sync.Mutex
	cl  *kgo.Client
	pub audit.Publisher
}

func (a *auditPublisher) publish(ctx context.Context, events []AuditEvent) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pub == nil {
		cl, err := network.NewClient(network.ClientConfig{Brokers: a.cfg.AuditBrokers, ClientID: a.cfg.ClientID}.Secured(*a.cfg.AuditSecurity), kgo.AllowAutoTopicCreation())
		if err != nil {
			return err
		}
		a.cl, a.pub = cl, audit.NewKafkaPublisher(cl, a.cfg.AuditTopic)
	}
	out := make([]audit.Event, len(events))
	now := time.Now().UTC()
	for i, e := range events {
		out[i] = audit.Event{ID: e.ID, Tier: audit.TierLoader, Cluster: a.cfg.AuditCluster, Instance: a.cfg.Name,
			Topic: e.Topic, WindowStart: time.UnixMilli(e.WindowStartMs).UTC(), Window: time.Duration(e.WindowMs) * time.Millisecond,
			Count: e.Count, Bytes: e.Bytes, Errors: e.Errors, EmittedAt: now}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return a.pub.Publish(ctx, out)
}

func (a *auditPublisher) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cl != nil {
		a.cl.Close()
	}
}

// ensurePartitioning checks that topic's layout (package hours: the
// topic's _partitioning marker, absent for the default hourly layout) is
// the configured one — partition.duration.ms, path.format and the stored
// Kafka columns — and writes the marker for a topic loaded for the first
// time with another layout, before any of its files.
func (l *Loader) ensurePartitioning(topic string) error {
	if _, ok := l.layouts.Load(topic); ok {
		return nil
	}
	want := l.layout
	have, err := hours.ReadLayout(l.fsys, l.base, topic)
	if err != nil {
		return err
	}
	marker := path.Join(l.base, topic, hours.PartitioningFile)
	exists, err := filesys.Exists(l.fsys, marker)
	if err != nil {
		return err
	}
	switch {
	case have.Same(want):
	case exists:
		return fmt.Errorf("%w: %s: topic %s is laid out with %s (%s); a topic's layout cannot change",
			ErrInvalidConfig, layoutKeys(want), topic, layoutKeys(have), marker)
	default:
		if list, err := hours.List(l.fsys, l.base, topic); err != nil {
			return err
		} else if len(list) > 0 {
			return fmt.Errorf("%w: %s: topic %s already has hourly partitions of the default layout under %s",
				ErrInvalidConfig, layoutKeys(want), topic, path.Join(l.base, topic))
		}
		tmp := marker + "." + l.runID + ".tmp"
		if err := filesys.WriteFile(l.fsys, tmp, hours.EncodeLayout(want)); err != nil {
			return err
		}
		if err := l.fsys.Rename(tmp, marker); err != nil {
			return err
		}
	}
	l.layouts.Store(topic, true)
	return nil
}

// layoutKeys names a layout by the configuration keys that make it.
func layoutKeys(l hours.Layout) string {
	return fmt.Sprintf("partition.duration.ms=%d path.format=%q store.kafka.keys=%t store.kafka.headers=%t store.kafka.coordinates=%t",
		l.Duration.Milliseconds(), l.PathFormat, l.Stored.Keys, l.Stored.Headers, l.Stored.Coordinates)
}
