package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/hours/rows"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/pageview"
)

// producerReports reads the load generators' latest reports.
func (s *Soak) producerReports() ([]ProducerReport, error) {
	var out []ProducerReport
	for _, f := range s.statsFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r ProducerReport
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func statsOf(rs []ProducerReport) []pipeline.ProducerStats {
	var out []pipeline.ProducerStats
	for _, r := range rs {
		out = append(out, r.ProducerStats)
	}
	return out
}

// expect checks a record read back against what its producer sent: every
// field but the timestamp is a function of (producer, seq).
func expect(t *tally, where, datacenter, producer string, seq int64, user, page string, hasReferrer bool) {
	want := pageview.Event(datacenter, producer, seq, time.Time{})
	if !strings.HasPrefix(producer, datacenter+"-") || user != want["user"] || page != want["page"] || hasReferrer != (want["referrer"] != nil) {
		t.badf("%s: %s/%d is not the record its producer sent (datacenter %q, user %q, page %q, referrer %v)", where, producer, seq, datacenter, user, page, hasReferrer)
	}
}

// readMirrored reads the analytics cluster's page-view topic from its
// start to its end: what the mirrors wrote, duplicates included.
func (s *Soak) readMirrored(ctx context.Context) (*tally, error) {
	codec, err := goavro.NewCodec(pageview.Schema)
	if err != nil {
		return nil, err
	}
	cc, err := s.clientConfig(Analytics)
	if err != nil {
		return nil, err
	}
	admCl, err := network.NewClient(cc)
	if err != nil {
		return nil, err
	}
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, Topic)
	admCl.Close()
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, err
	}
	want := map[int32]int64{}
	start := map[string]map[int32]kgo.Offset{Topic: {}}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			start[Topic][o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	t := newTally()
	if len(want) == 0 {
		return t, nil
	}
	cl, err := network.NewClient(cc, kgo.ConsumePartitions(start))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s of %s: %d partitions not read to their end: %w", Topic, Analytics, len(want), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			if r.Offset == end-1 {
				delete(want, r.Partition)
			}
			if len(r.Value) < 5 {
				t.badf("analytics %s/%d@%d: not a framed Avro value", Topic, r.Partition, r.Offset)
				return
			}
			native, _, err := codec.NativeFromBinary(r.Value[5:])
			m, _ := native.(map[string]any)
			if err != nil || m == nil {
				t.badf("analytics %s/%d@%d: not a page view: %v", Topic, r.Partition, r.Offset, err)
				return
			}
			producer, _ := m["producer"].(string)
			seq, _ := m["seq"].(int64)
			dc, _ := m["datacenter"].(string)
			user, _ := m["user"].(string)
			page, _ := m["page"].(string)
			expect(t, "analytics", dc, producer, seq, user, page, m["referrer"] != nil)
			t.add(producer, seq)
		})
	}
	return t, nil
}

// loaded is what the loaded files hold, read with the repository's reader.
type loaded struct {
	t         *tally
	files     []hours.Data
	latencies []time.Duration // per record: its file's mtime minus its event time
	where     map[string]string
}

// readLoaded reads every loaded file of the topic (package hours lists
// them, package rows reads them).
func (s *Soak) readLoaded(ctx context.Context) (*loaded, error) {
	fsys, base, err := s.openOutput(ctx)
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	l := &loaded{t: newTally(), where: map[string]string{}}
	files, err := hours.TopicData(fsys, base, Topic)
	if err != nil {
		if os.IsNotExist(err) {
			return l, nil
		}
		return nil, err
	}
	l.files = files
	for _, d := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		_, err := rows.Read(fsys, d, func(m map[string]any) error {
			producer, _ := m["producer"].(string)
			seq, _ := m["seq"].(int64)
			dc, _ := m["datacenter"].(string)
			user, _ := m["user"].(string)
			page, _ := m["page"].(string)
			ts, _ := m["timestamp"].(time.Time)
			expect(l.t, d.Path(), dc, producer, seq, user, page, m["referrer"] != nil)
			key := producer + "/" + strconv.FormatInt(seq, 10)
			if prev, ok := l.where[key]; ok && l.t.count(producer, seq) > 0 {
				l.t.badf("%s loaded twice: in %s and in %s", key, prev, d.Path())
			} else {
				l.where[key] = d.Path()
			}
			l.t.add(producer, seq)
			l.latencies = append(l.latencies, d.ModTime.Sub(ts))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// fastavroScript reads the Avro container files listed, one a line, in
// the file its argument names and prints one tab-separated line per record.
const fastavroScript = `
import sys, fastavro
out = sys.stdout
for name in open(sys.argv[1]).read().split("\n"):
    with open(name, "rb") as f:
        for r in fastavro.reader(f):
            out.write("%s\t%s\t%d\t%s\t%s\t%d\n" % (r["datacenter"], r["producer"], r["seq"], r["user"], r["page"], 0 if r["referrer"] is None else 1))
`

// readFastavro copies the loaded Avro files to local disk and reads them
// with Python's fastavro, a reader independent of ours.
func (s *Soak) readFastavro(ctx context.Context, files []hours.Data) (*tally, error) {
	fsys, _, err := s.openOutput(ctx)
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	dir := filepath.Join(s.dir, "readback")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var local []string
	for i, d := range files {
		if d.Format != hours.Avro {
			return nil, fmt.Errorf("%s: only Avro files are expected (nothing compacts in the soak)", d.Path())
		}
		b, err := filesys.ReadFile(fsys, d.Path())
		if err != nil {
			return nil, err
		}
		name := filepath.Join(dir, fmt.Sprintf("%05d-%s", i, path.Base(d.Name)))
		if err := os.WriteFile(name, b, 0o644); err != nil {
			return nil, err
		}
		local = append(local, name)
	}
	t := newTally()
	if len(local) == 0 {
		return t, nil
	}
	argsFile := filepath.Join(dir, "files.txt")
	if err := os.WriteFile(argsFile, []byte(strings.Join(local, "\n")), 0o644); err != nil {
		return nil, err
	}
	// The file names go through a file: thousands of them overflow argv.
	cmd := exec.CommandContext(ctx, s.cfg.Python, "-c", fastavroScript, argsFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("fastavro: %w", err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 6 {
			t.badf("fastavro: unexpected line %q", sc.Text())
			continue
		}
		seq, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.badf("fastavro: seq %q", f[2])
			continue
		}
		expect(t, "fastavro", f[0], f[1], seq, f[3], f[4], f[5] == "1")
		t.add(f[1], seq)
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("fastavro (%s): %v: %s", s.cfg.Python, err, stderr.String())
	}
	return t, nil
}

// window is one audit window as the audit service's API returns it.
type window struct {
	Topic       string           `json:"topic"`
	WindowStart time.Time        `json:"window_start"`
	Closed      bool             `json:"closed"`
	Status      string           `json:"status"`
	Producer    int64            `json:"producer"`
	Counts      map[string]int64 `json:"counts"`
}

// complete: every tier saw every acknowledged record, and the loader
// (which must be exactly once) no more.
func (w window) complete() bool {
	return w.Producer > 0 && w.Counts["mirror"] >= w.Producer && w.Counts["loader"] == w.Producer
}

func (w window) String() string {
	return fmt.Sprintf("window %s of %s: producer %d, mirror %d, loader %d", w.WindowStart.UTC().Format(time.RFC3339), w.Topic, w.Producer, w.Counts["mirror"], w.Counts["loader"])
}

// auditWindows asks the audit service for the topic's windows.
func (s *Soak) auditWindows(ctx context.Context) ([]window, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.auditURL+"/api/topics/"+Topic+"/windows", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("audit service: %s", resp.Status)
	}
	var ws []window
	if err := json.NewDecoder(resp.Body).Decode(&ws); err != nil {
		return nil, fmt.Errorf("audit service: %w", err)
	}
	return ws, nil
}

// mirrorUndercount: the loader tier is exact and only the mirror tier is
// short, which happens when a SIGKILLed mirror had committed source
// offsets whose counts it had not published yet (the records themselves
// are not re-mirrored, so their counts are lost).
func (w window) mirrorUndercount() bool {
	return w.Producer > 0 && w.Counts["loader"] == w.Producer && w.Counts["mirror"] < w.Producer
}

// auditTally counts closed and complete windows and lists the incomplete.
func auditTally(ws []window) (closed, complete int, bad []window, open int) {
	for _, w := range ws {
		if !w.Closed {
			open++
			continue
		}
		closed++
		if w.complete() {
			complete++
		} else {
			bad = append(bad, w)
		}
	}
	return closed, complete, bad, open
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}
