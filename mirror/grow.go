package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// targetMetadataPoll spaces the looks at the target producer's metadata
// while it learns of partitions just added.
const targetMetadataPoll = 50 * time.Millisecond

// awaitTargetPartition runs before the first record of a source partition
// goes to the target through producer. A partition beyond the target topic's count (the
// source grew and the group assigned the new partition before the topic
// refresh saw it) first grows the target topic (ensureTarget,
// CreatePartitions). A producer that already knows the target topic but
// not this partition would refuse the record for good ("invalid record
// partitioning choice"), so its metadata is refreshed until it shows the
// partition; one that does not know the topic yet loads it whole on the
// first record. It returns an error only when ctx ends or the growth fails.
func (m *Mirror) awaitTargetPartition(ctx context.Context, producer *kgo.Client, ps *partState) error {
	m.mu.Lock()
	have := m.made[ps.target]
	m.mu.Unlock()
	if int(ps.partition) >= have {
		var src *source
		for _, s := range m.sources {
			if s.cfg.Name == ps.source {
				src = s
			}
		}
		if src != nil {
			if err := m.ensureTarget(ctx, src, ps.topic, int(ps.partition)+1); err != nil {
				return fmt.Errorf("growing target topic %s to %d partitions: %w", ps.target, ps.partition+1, err)
			}
		}
	}
	if err := awaitPartitionKnown(ctx, producer, ps.target, ps.partition); err != nil {
		return err
	}
	ps.targetKnown.Store(true)
	return nil
}

// awaitPartitionKnown refreshes cl's metadata until it shows partition of
// topic, unless cl does not know topic at all yet (it then loads every
// partition on its first record). It returns an error only when ctx ends.
func awaitPartitionKnown(ctx context.Context, cl *kgo.Client, topic string, partition int32) error {
	for {
		if leader, _, _ := cl.PartitionLeader(topic, 0); leader < 0 {
			return nil
		}
		if leader, _, _ := cl.PartitionLeader(topic, partition); leader >= 0 {
			return nil
		}
		cl.ForceMetadataRefresh()
		select {
		case <-time.After(targetMetadataPoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
