package group

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	committedDesc = prometheus.NewDesc("tributary_group_committed_offset",
		"Committed offset (next offset to consume) per group and partition, for the groups this broker coordinates.",
		[]string{"group", "topic", "partition"}, nil)
	lagDesc = prometheus.NewDesc("tributary_group_lag",
		"Log end offset minus committed offset, for the partitions whose log end offset this broker knows (those it leads).",
		[]string{"group", "topic", "partition"}, nil)
	membersDesc = prometheus.NewDesc("tributary_group_members",
		"Members per group coordinated by this broker, with the group's state.",
		[]string{"group", "state"}, nil)
)

// Collector returns a Prometheus collector of the coordinated groups'
// committed offsets, members and, where endOffset knows the partition's
// log end offset (ok false otherwise), lag. In a cluster the lag of a
// partition led by another broker is
// tributary_broker_log_end_offset - tributary_group_committed_offset
// across the brokers' metrics.
func (c *Coordinator) Collector(endOffset func(topic string, p int32) (int64, bool)) prometheus.Collector {
	return collector{c: c, endOffset: endOffset}
}

type collector struct {
	c         *Coordinator
	endOffset func(topic string, p int32) (int64, bool)
}

func (k collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- committedDesc
	ch <- lagDesc
	ch <- membersDesc
}

func (k collector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range k.c.allGroups() {
		g.mu.Lock()
		if g.state == stateDead {
			g.mu.Unlock()
			continue
		}
		members, state := len(g.members), g.state.String()
		if g.cg != nil {
			members, state = len(g.cg.members), g.cg.stateName()
		}
		ch <- prometheus.MustNewConstMetric(membersDesc, prometheus.GaugeValue, float64(members), g.id, state)
		type point struct {
			topic  string
			p      int32
			offset int64
		}
		var points []point
		for t, ps := range g.offsets {
			for p, o := range ps {
				points = append(points, point{t, p, o.Offset})
			}
		}
		g.mu.Unlock()
		for _, pt := range points {
			part := strconv.Itoa(int(pt.p))
			ch <- prometheus.MustNewConstMetric(committedDesc, prometheus.GaugeValue, float64(pt.offset), g.id, pt.topic, part)
			if k.endOffset == nil || pt.offset < 0 {
				continue
			}
			if end, ok := k.endOffset(pt.topic, pt.p); ok {
				ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(max(end-pt.offset, 0)), g.id, pt.topic, part)
			}
		}
	}
}
