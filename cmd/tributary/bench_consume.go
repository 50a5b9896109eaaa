package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partitionsFrom returns the direct-consume assignment of every partition
// of the topic, starting at the given offsets (or at the log start where
// offsets is nil).
func (o *benchOptions) partitionsFrom(ctx context.Context, adm *kadm.Client, offsets kadm.ListedOffsets) (map[string]map[int32]kgo.Offset, error) {
	if offsets == nil {
		n, err := topicPartitions(ctx, adm, o.topic)
		if err != nil {
			return nil, err
		}
		parts := make(map[int32]kgo.Offset, n)
		for p := range n {
			parts[p] = kgo.NewOffset().AtStart()
		}
		return map[string]map[int32]kgo.Offset{o.topic: parts}, nil
	}
	parts := make(map[int32]kgo.Offset)
	for _, lo := range offsets[o.topic] {
		if lo.Err != nil {
			return nil, fmt.Errorf("list offsets of %s partition %d: %w", o.topic, lo.Partition, lo.Err)
		}
		parts[lo.Partition] = kgo.NewOffset().At(lo.Offset)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: %s", errTopicMissing, o.topic)
	}
	return map[string]map[int32]kgo.Offset{o.topic: parts}, nil
}

func (o *benchOptions) newConsumer(parts map[string]map[int32]kgo.Offset) (*kgo.Client, error) {
	iso, err := o.isolationLevel()
	if err != nil {
		return nil, err
	}
	return o.client.newClient(kgo.ConsumePartitions(parts), kgo.FetchIsolationLevel(iso))
}

// pollIdle polls once, giving up after the --timeout-ms idle limit. It
// returns an error when that limit passed with nothing fetched.
func (o *benchOptions) pollIdle(ctx context.Context, cl *kgo.Client) (kgo.Fetches, error) {
	pollCtx, cancel := context.WithTimeout(ctx, time.Duration(o.timeoutMs)*time.Millisecond)
	defer cancel()
	fetches := cl.PollFetches(pollCtx)
	if err := fetchError(fetches, io.Discard); err != nil {
		return nil, err
	}
	if fetches.NumRecords() == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if pollCtx.Err() != nil {
			return nil, fmt.Errorf("no record for %d ms (--timeout-ms)", o.timeoutMs)
		}
	}
	return fetches, nil
}

func (o *benchOptions) runConsume(ctx context.Context, adm *kadm.Client, out io.Writer) error {
	start := time.Now()
	setupCtx, cancel := context.WithTimeout(ctx, o.client.requestTimeout)
	parts, err := o.partitionsFrom(setupCtx, adm, nil)
	cancel()
	if err != nil {
		return err
	}
	cl, err := o.newConsumer(parts)
	if err != nil {
		return err
	}
	defer cl.Close()
	res := consumeResult{start: start, rebalance: time.Since(start)}

	var pollErr error
	for res.records < o.records {
		fetches, err := o.pollIdle(ctx, cl)
		if err != nil {
			pollErr = err
			break
		}
		// The iterator avoids EachRecord's closure on the hot path.
		for it := fetches.RecordIter(); !it.Done() && res.records < o.records; {
			r := it.Next()
			res.records++
			res.bytes += int64(len(r.Key) + len(r.Value))
		}
	}
	res.end = time.Now()
	fmt.Fprintln(out, consumeHeader)
	fmt.Fprintln(out, res)
	if pollErr != nil {
		return fmt.Errorf("consumed %d of %d records: %w", res.records, o.records, pollErr)
	}
	return nil
}
