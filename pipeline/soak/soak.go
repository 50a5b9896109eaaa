package soak

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/soak/link"
)

// ProducerReport is what a load generator (`tributary soak produce`)
// writes to its stats file, every second and at its end.
type ProducerReport struct {
	pipeline.ProducerStats
	Datacenter string `json:"datacenter"`
	Final      bool   `json:"final"` // written after its last acknowledgement
	Error      string `json:"error,omitempty"`
}

// Soak is one run.
type Soak struct {
	cfg   Config
	t     timing
	dir   string
	runID string
	seed  int64

	zk, zkDir   string
	zkEnv       []string
	hdfs        string
	hdfsDir     string
	hdfsPid     int
	registryURL string
	auditURL    string

	links      map[string]*link.Link // datacenter -> its link to analytics
	brokers    map[string][]*broker
	registries []*proc
	audit      *proc
	mirrors    []*proc
	loaders    []*proc
	schedulers []*proc
	producers  []*proc
	statsFiles []string
	procs      []*proc // all, in start order
	cleanups   []func() error

	started time.Time // the producers' start
	slow    sync.WaitGroup
	linkGen map[string]int // per datacenter link, counts its cuts (guarded by mu)

	mu         sync.Mutex
	jvmSamples map[string]*jvm
	twiceSeen  int64 // records loaded twice, as the last check saw
	faults     []injected
	problems   []string // seen by the continuous checks
	out        *syncWriter

	sec *secured // nil unless Config.Secure
}

// Run runs a soak: starts every part as its own process, produces for
// Duration while faults are injected, drains, checks and reports. The
// Result says whether nothing was lost or doubled; err is for a soak that
// could not run.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"logs", "config"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	seed := cfg.Seed
	if seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = int64(uint64(b[0])<<40|uint64(b[1])<<32|uint64(b[2])<<24|uint64(b[3])<<16|uint64(b[4])<<8|uint64(b[5])) + 1
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	s := &Soak{
		cfg: cfg, t: timingFor(cfg.Duration), dir: dir, runID: hex.EncodeToString(id[:]), seed: seed,
		links: map[string]*link.Link{}, brokers: map[string][]*broker{}, out: &syncWriter{w: cfg.Out},
	}
	defer func() {
		if err := s.close(); err != nil {
			cfg.Logger.Warn("soak: stopping", "err", err)
		}
	}()
	s.printf("soak: seed %d (replay with SOAK_SEED=%d), producing %v at %.0f page views/s per datacenter, data and logs in %s\n",
		seed, seed, cfg.Duration, cfg.Rate, dir)
	began := time.Now()
	if err := s.start(ctx); err != nil {
		return nil, fmt.Errorf("soak: start-up: %w", err)
	}
	s.printf("soak: %d processes up in %v: ZooKeeper %s, HDFS %s (2 DataNodes), registry %s, audit %s\n",
		len(s.procs)+4, time.Since(began).Round(time.Second), s.zk, s.hdfs, s.registryURL, s.auditURL)
	return s.run(ctx, mrand.New(mrand.NewPCG(uint64(seed), 0x50a4)))
}

func (s *Soak) start(ctx context.Context) error {
	steps := []func(context.Context) error{
		s.startZooKeeper, s.startHDFS, s.startBrokers, s.startRegistries, s.startAudit, s.startMirrors, s.startLoaders,
	}
	if s.cfg.Secure {
		steps = append([]func(context.Context) error{s.setupSecure}, steps...)
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	if s.sec != nil {
		if err := s.verifySecured(ctx); err != nil {
			return err
		}
	}
	s.started = time.Now()
	return s.startProducers(ctx)
}

func (s *Soak) run(ctx context.Context, rng *mrand.Rand) (*Result, error) {
	produce, stopProducing := context.WithTimeout(ctx, s.cfg.Duration)
	defer stopProducing()
	bg, stopBg := context.WithCancel(ctx)
	defer stopBg()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.sampleEvery(bg) }()
	go func() { defer wg.Done(); s.checkEvery(bg) }()
	faultsDone := make(chan struct{})
	go func() { defer close(faultsDone); s.runFaults(ctx, produce, rng) }()
	<-produce.Done()
	// A short run produces until every fault kind has been injected.
	<-faultsDone
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("soak: interrupted: %w", err)
	}
	s.slow.Wait() // every link healthy before the drain
	produced := time.Since(s.started)
	s.printf("%5.0fs  stopping the producers\n", produced.Seconds())
	for _, p := range s.producers {
		if err := p.stop(); err != nil {
			s.problem("producer: %v", err)
		}
	}
	res, err := s.drain(ctx)
	stopBg()
	wg.Wait()
	if res != nil {
		res.Producing = produced
		s.sampleAll(time.Now())
		res.fill(s)
		res.Print(s.out)
	}
	return res, err
}

// problem records what a continuous check saw.
func (s *Soak) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.problems = append(s.problems, msg)
	s.mu.Unlock()
	s.printf("%5.0fs  PROBLEM: %s\n", time.Since(s.started).Seconds(), msg)
}

func (s *Soak) printf(format string, args ...any) { fmt.Fprintf(s.out, format, args...) }

// sampleEvery samples every process's resources.
func (s *Soak) sampleEvery(ctx context.Context) {
	s.sampleAll(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-time.After(s.t.sampleEvery):
			s.sampleAll(now)
		}
	}
}

func (s *Soak) sampleAll(now time.Time) {
	for _, p := range s.procs {
		p.sample(now)
	}
	for _, j := range s.jvms() {
		j.sample(now)
	}
}

// checkEvery runs the continuous checks: nothing loaded twice, nothing
// loaded that was not acknowledged... and shows the progress.
func (s *Soak) checkEvery(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.t.check):
		}
		s.checkOnce(ctx)
	}
}

func (s *Soak) checkOnce(ctx context.Context) {
	reports, err := s.producerReports()
	if err != nil {
		return
	}
	var acked int64
	for _, r := range reports {
		acked += r.Sent - r.Failed
	}
	l, err := s.readLoaded(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.printf("%5.0fs  check: reading the loaded files: %v\n", time.Since(s.started).Seconds(), err)
		}
		return
	}
	cmp := l.t.compare(statsOf(reports), false)
	s.mu.Lock()
	news := cmp.twice > s.twiceSeen
	s.twiceSeen = max(s.twiceSeen, cmp.twice)
	s.mu.Unlock()
	if news {
		var twice []string // records still in flight are not missing yet
		for _, p := range cmp.problems {
			if !strings.Contains(p, "missing") {
				twice = append(twice, p)
			}
		}
		s.problem("%d records loaded more than once: %s", cmp.twice, strings.Join(twice, "; "))
	}
	ws, err := s.auditWindows(ctx)
	closed, complete, _, open := auditTally(ws)
	auditState := fmt.Sprintf("audit %d of %d closed windows complete, %d open", complete, closed, open)
	if err != nil {
		auditState = "audit: " + err.Error()
	}
	s.printf("%5.0fs  check: %d acknowledged, %d loaded in %d files (%d twice), %s\n",
		time.Since(s.started).Seconds(), acked, cmp.present, len(l.files), cmp.twice, auditState)
}

// drain waits until every acknowledged record is loaded and every audit
// window closed and complete (or Drain passes), then makes the final
// checks.
func (s *Soak) drain(ctx context.Context) (*Result, error) {
	reports, err := s.producerReports()
	if err != nil {
		return nil, err
	}
	for _, r := range reports {
		if !r.Final {
			s.problem("producer %s wrote no final report: its last counts are used", r.Producer)
		}
		if r.Error != "" {
			s.printf("       producer %s: %s\n", r.Producer, r.Error)
		}
	}
	stats := statsOf(reports)
	deadline := time.Now().Add(s.cfg.Drain)
	var last string
	same := 0
	for {
		l, err := s.readLoaded(ctx)
		done := false
		if err == nil {
			cmp := l.t.compare(stats, false)
			ws, werr := s.auditWindows(ctx)
			closed, complete, _, open := auditTally(ws)
			state := fmt.Sprintf("%d of %d acknowledged loaded, audit %d of %d closed windows complete, %d open", cmp.present, cmp.acked, complete, closed, open)
			settled := werr == nil && cmp.missing == 0 && open == 0 && closed > 0
			// Done once complete, or once an incomplete state stayed the
			// same for a while: a tier's last counts may trail its files.
			if settled && state == last {
				same++
			} else {
				same = 0
			}
			last = state
			done = settled && (complete == closed || same >= 4)
		} else {
			last = err.Error()
		}
		if done || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
	s.printf("%5.0fs  drained: %s\n", time.Since(s.started).Seconds(), last)
	return s.final(ctx, reports)
}

// final makes the end-of-run checks with every reader.
func (s *Soak) final(ctx context.Context, reports []ProducerReport) (*Result, error) {
	stats := statsOf(reports)
	res := &Result{}
	for _, r := range reports {
		res.Produced += r.Sent - r.Failed
		res.Failed += r.Failed
	}
	mirrored, err := s.readMirrored(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading what was mirrored: %w", err)
	}
	mc := mirrored.compare(stats, true)
	res.Mirrored = mc.present
	res.MirrorRecords = mirrored.total
	res.MirrorDuplicates = mc.twice
	for _, p := range mc.problems {
		res.Problems = append(res.Problems, "mirrored: "+p)
	}
	l, err := s.readLoaded(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the loaded files: %w", err)
	}
	gc := l.t.compare(stats, false)
	fa, err := s.readFastavro(ctx, l.files)
	if err != nil {
		return nil, fmt.Errorf("reading the loaded files with fastavro: %w", err)
	}
	fc := fa.compare(stats, false)
	res.Loaded = fc.once
	res.LoadedTwice = fc.twice
	res.Files = len(l.files)
	res.LoadedRecords = fa.total
	for _, p := range fc.problems {
		res.Problems = append(res.Problems, "loaded (fastavro): "+p)
	}
	for _, p := range gc.problems {
		res.Problems = append(res.Problems, "loaded (rows): "+p)
	}
	if gc.once != fc.once || l.t.total != fa.total {
		res.Problems = append(res.Problems, fmt.Sprintf("the two readers disagree: rows %d records (%d exactly once), fastavro %d (%d)", l.t.total, gc.once, fa.total, fc.once))
	}
	// Mirrored must hold everything loaded.
	for p, seqs := range fa.seen {
		for seq, n := range seqs {
			if n > 0 && mirrored.count(p, int64(seq)) == 0 {
				res.Problems = append(res.Problems, fmt.Sprintf("%s/%d loaded but not in analytics", p, seq))
				break
			}
		}
	}
	res.Latency50 = quantile(l.latencies, 0.50)
	res.Latency99 = quantile(l.latencies, 0.99)
	res.LatencyMax = quantile(l.latencies, 1)
	ws, err := s.auditWindows(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	closed, complete, bad, open := auditTally(ws)
	res.Windows, res.Complete, res.OpenWindows = closed, complete, open
	for _, w := range bad {
		if w.mirrorUndercount() && mc.missing == 0 {
			res.MirrorUndercounted++
			res.Problems = append(res.Problems, fmt.Sprintf("%s %s: every record of it is in analytics and loaded once, "+
				"so the mirror tier lost counts: a SIGKILLed mirror had committed offsets whose audit counts it had not published", MirrorUndercount, w))
			continue
		}
		res.Problems = append(res.Problems, "audit: incomplete "+w.String())
	}
	s.mu.Lock()
	res.Problems = append(res.Problems, s.problems...)
	s.mu.Unlock()
	return res, nil
}

// close stops every process, newest first, then ZooKeeper and HDFS.
func (s *Soak) close() error {
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	// Clients first, in parallel, then the brokers, then the servers.
	stopAll := func(ps []*proc) {
		for _, p := range ps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.stop(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	var clients, brokers []*proc
	for _, p := range s.procs {
		isBroker := false
		for _, bs := range s.brokers {
			for _, b := range bs {
				isBroker = isBroker || b.proc == p
			}
		}
		if isBroker {
			brokers = append(brokers, p)
		} else {
			clients = append(clients, p)
		}
	}
	stopAll(clients)
	stopAll(brokers)
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		if err := s.cleanups[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// jvms are ZooKeeper's and HDFS's processes, sampled like the others.
func (s *Soak) jvms() []*jvm {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jvmSamples == nil {
		s.jvmSamples = map[string]*jvm{}
	}
	var out []*jvm
	add := func(name string, pid int) {
		j := s.jvmSamples[name]
		if j == nil {
			j = &jvm{proc: proc{name: name}}
			s.jvmSamples[name] = j
		}
		j.pidNow = pid
		out = append(out, j)
	}
	for n := 1; n <= 3; n++ {
		add(fmt.Sprintf("zookeeper-%d", n), s.zkPid(n))
	}
	add("hdfs (NameNode + 2 DataNodes)", s.hdfsPid)
	return out
}

// jvm is a server process started by a script, sampled by pid.
type jvm struct {
	proc
	pidNow int
}

func (j *jvm) sample(now time.Time) {
	if j.pidNow == 0 {
		return
	}
	sm, err := readProc(j.pidNow)
	if err != nil {
		return
	}
	sm.at, sm.started = now, now
	if n := len(j.samples); n > 0 && j.samples[n-1].pid == sm.pid {
		sm.started = j.samples[n-1].started
	}
	j.samples = append(j.samples, sm)
}

// syncWriter serializes writes to the output.
type syncWriter struct {
	mu sync.Mutex
	w  interface{ Write([]byte) (int, error) }
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
