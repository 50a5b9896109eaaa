package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// producerIDFile, in the first log dir, holds the first producer id not yet
// reserved. Frozen name.
const producerIDFile = "producer-ids"

// producerIDBlock is how many ids one write of the file reserves.
const producerIDBlock = 1000

// producerIDs hands out producer ids that are unique across restarts: a
// block is recorded durably before any id in it is returned, so a crash
// wastes at most the rest of a block and never repeats an id.
type producerIDs struct {
	mu   sync.Mutex
	path string
	next int64 // next id to hand out
	end  int64 // first id not reserved on disk
}

func openProducerIDs(path string) (*producerIDs, error) {
	p := &producerIDs{path: path}
	data, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return nil, fmt.Errorf("broker: reading %s: %w", producerIDFile, err)
	default:
		n, perr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if perr != nil || n < 0 {
			return nil, fmt.Errorf("broker: %s holds %q, not a producer id", producerIDFile, data)
		}
		p.next, p.end = n, n
	}
	return p, nil
}

// allocate returns a fresh producer id.
func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.end {
		if err := p.reserve(p.next + producerIDBlock); err != nil {
			return 0, err
		}
	}
	id := p.next
	p.next++
	return id, nil
}

// reserve durably records end as the first unreserved id (write, fsync,
// rename, fsync dir).
func (p *producerIDs) reserve(end int64) error {
	tmp := p.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("broker: reserving producer ids: %w", err)
	}
	_, err = f.WriteString(strconv.FormatInt(end, 10) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p.path)
	}
	if err == nil {
		if d, derr := os.Open(filepath.Dir(p.path)); derr == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("broker: reserving producer ids: %w", err)
	}
	p.end = end
	return nil
}
