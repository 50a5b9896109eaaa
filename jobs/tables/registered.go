package tables

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	hms "github.com/beltran/gohive/hive_metastore"
)

// RegisteredPartition is one partition as the metastore holds it.
type RegisteredPartition struct {
	Value    string // the PartitionColumn value (PartitionValue of its start)
	Location string // as the metastore stores it (it may write file:///x as file:/x)
	Format   string // "avro" or "parquet", from the partition's serde; "" for another serde
	// Created is the metastore's createTime: a partition dropped and added
	// again gets a new one.
	Created time.Time
}

// Registered lists the partitions of topic's table, sorted by value: what
// a metastore client (Spark, Hive, Trino) is shown. A missing table is an
// empty list.
func (m *Metastore) Registered(ctx context.Context, topic string) ([]RegisteredPartition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	db, table := m.cfg.Database, m.cfg.Table(topic)
	var (
		parts []*hms.Partition
		err   error
	)
	// As in Sync: a kept connection may have been cut, then one fresh dial.
	for reused := m.conn.client != nil; ; reused = false {
		cl, derr := m.conn.get(ctx)
		if derr != nil {
			return nil, fmt.Errorf("tables: topic %s: %w", topic, derr)
		}
		parts, err = cl.GetPartitions(ctx, db, table, -1)
		if err = m.conn.check(err); err == nil || !reused || !errors.Is(err, ErrUnavailable) {
			break
		}
	}
	if err != nil {
		if isNoSuchObject(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("tables: topic %s: list partitions of %s.%s: %w", topic, db, table, err)
	}
	out := make([]RegisteredPartition, 0, len(parts))
	for _, p := range parts {
		r := RegisteredPartition{Value: fmt.Sprint(p.Values), Created: time.Unix(int64(p.CreateTime), 0).UTC()}
		if len(p.Values) == 1 {
			r.Value = p.Values[0]
		}
		if p.Sd != nil {
			r.Location = p.Sd.Location
			r.Format = formatOf(p.Sd)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out, nil
}

func formatOf(sd *hms.StorageDescriptor) string {
	if sd.SerdeInfo == nil {
		return ""
	}
	switch sd.SerdeInfo.SerializationLib {
	case avroSerde:
		return "avro"
	case parquetSerde:
		return "parquet"
	}
	return ""
}
