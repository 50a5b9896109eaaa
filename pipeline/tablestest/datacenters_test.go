package tablestest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/audit/service"
	"github.com/tributary/tributary/client"
	"github.com/tributary/tributary/devcluster"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/jobs"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/jobs/tables"
	"github.com/tributary/tributary/mirror/origin"
	"github.com/tributary/tributary/pipeline/pageview"
)

var auditListening = regexp.MustCompile(`msg="audit service listening" addr=(\S+)`)

// TestDatacentersMirrorKilledSparkCountsAudit is the pipeline end to end
// into tables: page views produced in two datacenter clusters (dc1, dc2 on
// the test ZooKeeper, their producers audited as tier producer) are
// mirrored into the analytics cluster by `tributary mirror` (a child
// process, the paper's ZooKeeper consumer groups), loaded into HDFS by the
// scheduler's loader job and made ready, compacted and registered in the
// real Hive Metastore by its compact job, which asks `tributary audit
// serve` (a child process reading every cluster's audit topic) whether
// each hour is complete. Seven hours in three phases; each phase also puts
// a few records early into the next phase's first hour, which is compacted
// with them and recompacted when the rest arrive.
//
// The mirror is SIGKILLed and restarted three times: (a) before a
// compaction, (b) during one (held by compact.EnvPauseAt after a swap's
// commit while new records are produced and mirrored), (c) after one.
// Each kill comes once the mirror has sent everything produced so far,
// between two of its offset commits (offset.commit.interval.ms 3 s): its
// successor mirrors again what was sent since the commit its ZooKeeper
// offsets hold, and analytics must gain at least that many records.
//
// At the end Spark SQL reads the table: each hour's count(*) equals the
// producer tier's count of the audit service (its HTTP API) for the hour's
// windows and what the test produced, and count(DISTINCT (datacenter,
// producer, seq)) equals count(*); per producer, count(*) and count(DISTINCT
// seq) are what it sent and sum(seq) is that of 0..n-1 (so the seqs are
// exactly 0..n-1, each once), and user is the function of seq the producer
// wrote. Analytics holds every record (by origin header) plus the
// re-sends, and the loader's runs dropped exactly those as duplicates.
func TestDatacentersMirrorKilledSparkCountsAudit(t *testing.T) {
	uri := testenv.HiveMetastore(t)
	zk := testenv.ZooKeeper(t)
	ctx := context.Background()
	const (
		topic       = pageview.Topic
		partitions  = 2
		auditWindow = 10 * time.Minute
		group       = "tablestest-mirror"
	)
	windowMs := strconv.FormatInt(auditWindow.Milliseconds(), 10)
	r := newRig(t)
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	root := "/tablestest-dc-" + hex.EncodeToString(rb[:])
	dcNames := []string{"dc1", "dc2"}
	clusters := map[string]*devcluster.Cluster{"analytics": r.cl}
	for _, dc := range dcNames {
		c, err := devcluster.Start(ctx, devcluster.Config{Name: dc, Dir: t.TempDir(), ZooKeeper: zk + root + "/" + dc})
		if err != nil {
			t.Fatalf("cluster %s: %v", dc, err)
		}
		t.Cleanup(func() { c.Close() })
		clusters[dc] = c
	}
	admins := map[string]*kadm.Client{}
	for name, c := range clusters {
		kc, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(kc.Close)
		admins[name] = kadm.NewClient(kc)
		for tp, n := range map[string]int32{topic: partitions, audit.DefaultTopic: 1} {
			resp, err := admins[name].CreateTopic(ctx, n, 1, nil, tp)
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				t.Fatalf("cluster %s: create %s: %v", name, tp, err)
			}
		}
		testenv.WaitFor(t, time.Minute, "leaders on "+name, func() (bool, string) {
			md, err := admins[name].Metadata(ctx, topic, audit.DefaultTopic)
			if err != nil {
				return false, err.Error()
			}
			for _, td := range md.Topics {
				for _, pd := range td.Partitions {
					if pd.Err != nil || pd.Leader < 0 {
						return false, fmt.Sprintf("%s/%d: leader %d, %v", td.Topic, pd.Partition, pd.Leader, pd.Err)
					}
				}
			}
			return len(md.Topics) == 2, fmt.Sprint(md.Topics.Names())
		})
	}
	// ends sums the end offsets of cluster's page-view partitions (per partition too).
	ends := func(cluster string) (int64, map[int32]int64) {
		t.Helper()
		lo, err := admins[cluster].ListEndOffsets(ctx, topic)
		if err != nil || lo.Error() != nil {
			t.Fatalf("end offsets of %s on %s: %v %v", topic, cluster, err, lo.Error())
		}
		var sum int64
		per := map[int32]int64{}
		lo.Each(func(o kadm.ListedOffset) { sum += o.Offset; per[o.Partition] = o.Offset })
		return sum, per
	}

	args := []string{"audit", "serve", "--dir", t.TempDir(), "--listen", "127.0.0.1:0"}
	for _, name := range append(append([]string(nil), dcNames...), "analytics") {
		args = append(args, "--cluster", name+"="+strings.Join(clusters[name].Bootstrap(), ","))
	}
	auditURL := "http://" + startChild(t, "audit", nil, args...).waitLine(t, auditListening, time.Minute)
	auditClient, err := service.NewClient(auditURL, nil)
	if err != nil {
		t.Fatal(err)
	}

	mirrorProps := map[string]string{
		"target.bootstrap.servers": strings.Join(r.cl.Bootstrap(), ","), "target.name": "analytics",
		"topics": regexp.QuoteMeta(topic), "group.id": group,
		"offset.commit.interval.ms": "3000", "topic.refresh.interval.ms": "1000",
		"zookeeper.session.timeout.ms": "4000", "audit.window.ms": windowMs, "audit.interval.ms": "1000",
	}
	for _, dc := range dcNames {
		mirrorProps["source."+dc+".bootstrap.servers"] = strings.Join(clusters[dc].Bootstrap(), ",")
		mirrorProps["source."+dc+".zookeeper.connect"] = zk + root + "/" + dc
	}
	mirrorConf := testproc.WriteProperties(t, r.dir, "mirror.properties", mirrorProps)
	startMirror := func() *child {
		return startChild(t, "mirror", nil, "mirror", "--config", mirrorConf, "--log-level", "warn")
	}
	mirror := startMirror()

	db := fmt.Sprintf("tablestest_dc_%d", time.Now().UnixNano())
	tablesConf := testproc.WriteProperties(t, r.dir, "tables.properties", map[string]string{
		"hive.integration": "true", "hive.metastore.uris": uri, "hive.database": db,
		"schema.registry.url": r.cl.RegistryURL()})
	loaderConf := testproc.WriteProperties(t, r.dir, "loader.properties", map[string]string{
		"name": "pv-loader", "bootstrap.servers": strings.Join(r.cl.Bootstrap(), ","),
		"schema.registry.url": r.cl.RegistryURL(), "topics": regexp.QuoteMeta(topic), "output.uri": r.baseURI,
		"audit.cluster": "analytics", "audit.window.ms": windowMs})
	r.startScheduler(t, fmt.Sprintf(`
jobs:
  - name: load
    schedule: "0 0 1 1 *"
    kind: loader
    args: {config: %s}
    timeout: 3m
  - name: compact
    schedule: "0 0 1 1 *"
    kind: compact
    args: {base: "%s", loader_job: pv-loader, delay: 1m, tables_config: %s, audit_url: "%s"}
    timeout: 4m
`, loaderConf, r.baseURI, tablesConf, auditURL))

	type dcProducer struct {
		dc, id string
		p      *client.Producer
		next   int64
	}
	var producers []*dcProducer
	for _, dc := range dcNames {
		id := pageview.NewProducerID(dc)
		// franz-go measures the delivery timeout from a record's
		// timestamp, and these carry event times two days old.
		p, err := client.NewProducer(client.ProducerConfig{Brokers: clusters[dc].Bootstrap(), ClientID: id, Acks: client.AcksAll,
			DeliveryTimeout: 30 * 24 * time.Hour,
			Audit:           client.ProducerAudit{Cluster: dc, Window: auditWindow, Interval: time.Second, Instance: id}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		producers = append(producers, &dcProducer{dc: dc, id: id, p: p})
	}
	hour0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * 24 * time.Hour)
	hourValue := func(h int) string { return tables.PartitionValue(hour0.Add(time.Duration(h)*time.Hour), time.Hour) }
	const lastHour = 6
	var produced int64
	want := map[string]int64{} // hour -> records produced into it
	type seqs struct{ n, sum int64 }
	wantTable := map[string]*seqs{} // producer -> its records
	// produce sends n page views per datacenter into hour h, spread over
	// span minutes from minute from, and waits for their acknowledgements
	// and the producer tier's audit counts.
	produce := func(h, n, from, span int) {
		t.Helper()
		for _, pr := range producers {
			var fs []*client.Future
			for i := range n {
				ts := hour0.Add(time.Duration(h)*time.Hour + time.Duration(from)*time.Minute + time.Duration(i*span*60/n)*time.Second)
				v := pageview.Event(pr.dc, pr.id, pr.next, ts)
				val, err := r.ser.Encode(ctx, topic+"-value", pageview.Schema, v)
				if err != nil {
					t.Fatal(err)
				}
				fs = append(fs, pr.p.SendFuture(ctx, &client.Message{Topic: topic, Key: []byte(v["user"].(string)), Value: val, Timestamp: v["timestamp"].(time.Time)}))
				if wantTable[pr.id] == nil {
					wantTable[pr.id] = &seqs{}
				}
				wantTable[pr.id].n++
				wantTable[pr.id].sum += pr.next
				pr.next++
			}
			for _, f := range fs {
				if err := f.Wait(ctx); err != nil {
					t.Fatalf("%s: %v", pr.dc, err)
				}
			}
			if err := pr.p.FlushAudit(ctx); err != nil {
				t.Fatalf("%s: audit: %v", pr.dc, err)
			}
		}
		want[hourValue(h)] += int64(n * len(producers))
		produced += int64(n * len(producers))
	}
	// produceHour fills hour h; earlyHour puts a few records into hour h
	// a phase before: the loader, caught up, closes the hour, the audit
	// proves what it has complete, and it is compacted; the rest arrive
	// late and are merged by the next compaction (a new generation).
	produceHour := func(h int) { produce(h, 45, 0, 58) }
	earlyHour := func(h int) { produce(h, 12, 5, 10) }

	// readAnalytics reads analytics' page views up to the end offsets:
	// how many records, and how many distinct origins (the mirror's
	// origin header: source, partition, offset) among them.
	readAnalytics := func() (total, distinct int64) {
		t.Helper()
		total, end := ends("analytics")
		starts := map[int32]kgo.Offset{}
		for p := range int32(partitions) {
			starts[p] = kgo.NewOffset().AtStart()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(r.cl.Bootstrap()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		seen := map[string]bool{}
		next := map[int32]int64{}
		for p := range int32(partitions) {
			for next[p] < end[p] {
				fs := cl.PollFetches(cctx)
				if err := fs.Err(); err != nil {
					t.Fatalf("reading analytics: %v", err)
				}
				fs.EachRecord(func(rec *kgo.Record) {
					if rec.Offset >= end[rec.Partition] {
						return
					}
					next[rec.Partition] = max(next[rec.Partition], rec.Offset+1)
					for _, h := range rec.Headers {
						if h.Key == origin.Header {
							seen[string(h.Value)] = true
						}
					}
				})
			}
		}
		return total, int64(len(seen))
	}
	resent := int64(0)    // what the kills' successors must send again
	wantTotal := int64(0) // analytics holds at least this many records
	// mirrored waits until analytics holds every record produced (by
	// origin) and at least wantTotal records. The mirror may send records
	// again on its own too (a rebalance resumes from the last commit).
	mirrored := func(what string) {
		t.Helper()
		testenv.WaitFor(t, 3*time.Minute, "mirrored "+what, func() (bool, string) {
			total, distinct := readAnalytics()
			if distinct > produced {
				t.Fatalf("mirrored %s: analytics holds %d distinct origins, %d records were produced", what, distinct, produced)
			}
			return distinct == produced && total >= wantTotal, fmt.Sprintf("analytics holds %d records, %d distinct; want all %d produced and at least %d records",
				total, distinct, produced, wantTotal)
		})
	}
	// killMirror SIGKILLs the mirror once it has sent everything produced,
	// reads its group's committed offsets from each datacenter's ZooKeeper
	// (Kafka 0.8's /consumers/<group>/offsets/<topic>/<p>) and restarts it:
	// its successor sends the records past them again.
	killMirror := func(when string) {
		t.Helper()
		mirrored("before the kill " + when)
		mirror.kill(t)
		atKill, _ := readAnalytics()
		again := int64(0)
		for _, dc := range dcNames {
			sess, err := clusters[dc].Connector()(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, end := ends(dc)
			for p := range int32(partitions) {
				data, _, err := sess.Get(ctx, fmt.Sprintf("/consumers/%s/offsets/%s/%d", group, topic, p))
				committed := int64(0)
				switch {
				case errors.Is(err, coord.ErrNoNode):
				case err != nil:
					t.Fatal(err)
				default:
					if committed, err = strconv.ParseInt(string(data), 10, 64); err != nil {
						t.Fatalf("%s: offset of partition %d: %q", dc, p, data)
					}
				}
				again += end[p] - committed
			}
			sess.Close()
		}
		resent += again
		wantTotal = atKill + again
		t.Logf("mirror SIGKILLed %s: its successor mirrors %d records again", when, again)
		mirror = startMirror()
	}
	loaderDups := int64(0)
	load := func() {
		t.Helper()
		run := r.run(t, "load")
		sum := map[string]any{}
		if run.Status != jobs.StatusSucceeded || json.Unmarshal(run.Summary, &sum) != nil {
			t.Fatalf("load run: %s, %s, %s", run.Status, run.Summary, run.Error)
		}
		d, _ := sum["duplicates"].(float64)
		loaderDups += int64(d)
	}
	// auditHours sums the audit service's producer and loader tiers per hour.
	auditHours := func() (prod, loaded map[string]int64) {
		t.Helper()
		ws, err := auditClient.Windows(ctx, topic, hour0, hour0.Add(8*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		prod, loaded = map[string]int64{}, map[string]int64{}
		for _, w := range ws {
			h := tables.PartitionValue(w.WindowStart.Truncate(time.Hour), time.Hour)
			prod[h] += w.Producer
			loaded[h] += w.Counts[audit.TierLoader]
		}
		return prod, loaded
	}
	// audited waits until the audit service counts every record produced
	// at the producer and at the loader tier, which is what makes the
	// compact job mark the hours ready.
	audited := func() {
		t.Helper()
		testenv.WaitFor(t, 2*time.Minute, "audit counts of every hour", func() (bool, string) {
			prod, loaded := auditHours()
			for v, n := range want {
				if loaded[v] > n {
					t.Fatalf("hour %s: the audit service's loader tier counts %d records, %d were produced", v, loaded[v], n)
				}
				if prod[v] != n || loaded[v] != n {
					return false, fmt.Sprintf("hour %s: producer %d, loader %d, produced %d", v, prod[v], loaded[v], n)
				}
			}
			return true, ""
		})
	}
	compacted := func(n int) {
		t.Helper()
		var s []string
		for range n {
			s = append(s, "compacted")
		}
		if got, w := r.states(t, topic), strings.Join(s, " "); got != w {
			t.Fatalf("hours: %s, want %s", got, w)
		}
	}
	m := r.metastore(t, uri, db)

	// (a) The mirror killed before a compaction.
	produceHour(0)
	produceHour(1)
	earlyHour(2)
	killMirror("before a compaction")
	mirrored("after the restart")
	load()
	audited()
	if run := r.run(t, "compact"); run.Status != jobs.StatusSucceeded {
		t.Fatalf("compaction (a): %s %s", run.Status, run.Error)
	}
	compacted(3)
	r.checkTable(t, m, topic)

	// (b) The mirror killed during a compaction, held after its first
	// swap's commit while hour 4's records are produced and mirrored.
	produceHour(2)
	produceHour(3)
	earlyHour(4)
	mirrored("hours 2-3")
	load()
	audited()
	pause := filepath.Join(r.dir, "resume")
	t.Setenv(compact.EnvPauseAt, "commit _compacted:"+pause)
	req, err := r.store.Request(ctx, "compact")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		run *jobs.Run
		err error
	}
	done := make(chan result, 1)
	go func() {
		run, err := r.store.WaitRequest(ctx, "compact", req, 4*time.Minute)
		done <- result{run, err}
	}()
	testenv.WaitFor(t, 3*time.Minute, "compaction held after a commit", func() (bool, string) {
		_, err := os.Stat(pause + ".paused")
		return err == nil, fmt.Sprint(err)
	})
	os.Unsetenv(compact.EnvPauseAt) // later runs go through
	b, _ := os.ReadFile(pause + ".paused")
	t.Logf("compaction held at %s", strings.TrimSpace(string(b)))
	produceHour(4)
	killMirror("during a compaction")
	var held result
	testenv.WaitFor(t, 4*time.Minute, "the held compaction's end", func() (bool, string) {
		if _, err := os.Stat(pause + ".paused"); err == nil {
			if err := os.WriteFile(pause, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case held = <-done:
			return true, ""
		default:
			return false, "running"
		}
	})
	if held.err != nil || held.run.Status != jobs.StatusSucceeded {
		t.Fatalf("compaction (b): %v %+v", held.err, held.run)
	}
	t.Logf("held compact run: %s, summary %s", held.run.Status, held.run.Summary)
	compacted(5)
	r.checkTable(t, m, topic)

	// (c) The mirror killed after a compaction.
	produceHour(5)
	earlyHour(6)
	killMirror("after a compaction")
	mirrored("after the last restart")
	load()
	audited()
	if run := r.run(t, "compact"); run.Status != jobs.StatusSucceeded {
		t.Fatalf("compaction (c): %s %s", run.Status, run.Error)
	}
	compacted(lastHour + 1)
	parts := r.checkTable(t, m, topic)
	if len(parts) != lastHour+1 {
		t.Fatalf("table has %d partitions, want the %d ready hours", len(parts), lastHour+1)
	}

	// The mirror's re-sends were real, and the loader dropped exactly them.
	if total, distinct := readAnalytics(); resent == 0 || distinct != produced || total-produced < resent || loaderDups != total-produced {
		t.Fatalf("analytics holds %d records, %d distinct, for %d produced; the kills made %d re-sends; the loader dropped %d duplicates",
			total, distinct, produced, resent, loaderDups)
	}
	prod, _ := auditHours()
	res := testenv.SparkSQL(t, uri,
		fmt.Sprintf("SELECT hour, count(*) AS n, count(DISTINCT (datacenter, producer, seq)) AS d FROM %s.%s GROUP BY hour ORDER BY hour", db, topic),
		fmt.Sprintf("SELECT producer, count(*) AS n, count(DISTINCT seq) AS d, sum(seq) AS s, "+
			"sum(CASE WHEN `user` = concat('user-', CAST(pmod(seq * 7919, 1000) AS STRING)) THEN 0 ELSE 1 END) AS bad "+
			"FROM %s.%s GROUP BY producer ORDER BY producer", db, topic))
	got := map[string]int64{}
	for _, row := range res[0] {
		h, n, d := fmt.Sprint(row["hour"]), int64(row["n"].(float64)), int64(row["d"].(float64))
		got[h] = n
		if n != d || n != prod[h] || n != want[h] {
			t.Errorf("hour %s: Spark counts %d rows, %d distinct (datacenter, producer, seq); the audit service's producer tier %d; produced %d",
				h, n, d, prod[h], want[h])
		}
	}
	if len(got) != lastHour+1 {
		t.Errorf("Spark reads the hours %v, want %d", got, lastHour+1)
	}
	if len(res[1]) != len(producers) {
		t.Errorf("Spark sees producers %v, want %d", res[1], len(producers))
	}
	for _, row := range res[1] {
		w := wantTable[fmt.Sprint(row["producer"])]
		if w == nil {
			t.Errorf("Spark sees producer %v, which the test never ran", row["producer"])
			continue
		}
		if row["n"] != float64(w.n) || row["d"] != float64(w.n) || row["s"] != float64(w.sum) || row["bad"] != 0.0 {
			t.Errorf("producer %v: Spark reads %v, want %d records, each once, seq sum %d, every user as written", row["producer"], row, w.n, w.sum)
		}
	}
	t.Logf("Spark per hour %v = the audit's producer tier = produced (%d records; the mirror sent %d again, %d of them after the kills; the loader dropped them)",
		got, produced, loaderDups, resent)
}
