package icetable

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkAppend measures Append (Parquet write and one commit on the SQL
// catalog, file:// warehouse) of batches of 10,000 records of the type
// matrix, one Kafka hour each.
func BenchmarkAppend(b *testing.B) {
	t := b
	cat := newCatalogB(b)
	ctx := context.Background()
	s := mustSchema(t, typesSchema)
	tbl, err := cat.Table(ctx, "bench", "bench", s)
	if err != nil {
		b.Fatal(err)
	}
	const per = 10000
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	values := make([]any, 100)
	for i := range values {
		v, _ := typesRecord(i, base)
		values[i] = native(t, s, v)
	}
	bin, _ := s.Codec().BinaryFromNative(nil, values[0])
	b.SetBytes(int64(len(bin)) * per)
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; n++ {
		batch := Batch{Offsets: map[int32]int64{0: int64(n+1) * per}, Origins: map[int32]string{0: fmt.Sprint(n)}}
		for i := 0; i < per; i++ {
			batch.Records = append(batch.Records, Record{Partition: 0, Offset: int64(n*per + i),
				Timestamp: base.Add(time.Duration(n) * time.Hour), Value: values[i%len(values)]})
		}
		if err := tbl.Append(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*per)/time.Since(start).Seconds(), "records/s")
}

func newCatalogB(b *testing.B) *Catalog {
	b.Helper()
	dir := b.TempDir()
	cat, err := Open(context.Background(), Config{URI: dir + "/catalog.db", Warehouse: "file://" + dir + "/warehouse"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cat.Close() })
	return cat
}
