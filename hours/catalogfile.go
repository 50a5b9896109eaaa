package hours

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"
)

// FileCatalog is a Catalog kept in one local JSON file, {"<topic>":
// [Partition, ...]}, replaced atomically (a rename) by each Sync: for
// tools and tests without a table catalog service (`tributary jobs compact
// --catalog-file`). It serialises the Syncs of one process only.
type FileCatalog struct {
	Path string
	mu   sync.Mutex
}

// Sync replaces topic's partitions in the file with want.
func (c *FileCatalog) Sync(_ context.Context, topic string, want []Partition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	all, err := ReadFileCatalog(c.Path)
	if err != nil {
		return err
	}
	want = append([]Partition(nil), want...)
	sort.Slice(want, func(i, j int) bool { return want[i].Start.Before(want[j].Start) })
	all[topic] = want
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	tmp := c.Path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("catalog file: %w", err)
	}
	if err := os.Rename(tmp, c.Path); err != nil {
		return fmt.Errorf("catalog file: %w", err)
	}
	return nil
}

// ReadFileCatalog reads a FileCatalog's file: topic -> partitions (empty
// when there is no file yet).
func ReadFileCatalog(path string) (map[string][]Partition, error) {
	all := map[string][]Partition{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return all, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalog file: %w", err)
	}
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("catalog file %s: %w", path, err)
	}
	return all, nil
}
