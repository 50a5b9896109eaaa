package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/tributary/tributary/internal/coord"
)

// producerIDFile, in the first log dir, holds the first producer id not yet
// reserved. Frozen name.
const producerIDFile = "producer-ids"

// producerIDBlock is how many ids one write of the file reserves.
const producerIDBlock = 1000

// producerIDBlockPath is Kafka's node for cluster-wide producer id blocks
// (frozen): {"version":1,"broker":B,"block_start":"S","block_end":"E"}, E
// inclusive, numbers as strings as Kafka writes them.
const producerIDBlockPath = "/latest_producer_id_block"

// producerIDBlockAttempts bounds compare-and-set retries against other
// brokers reserving at the same time, and session re-opens.
const producerIDBlockAttempts = 20

// producerIDs hands out producer ids that are unique across restarts: a
// block is recorded durably before any id in it is returned, so a crash
// wastes at most the rest of a block and never repeats an id.
//
// In a cluster (remote set) blocks are reserved in the coordinator, as
// Kafka does, so that brokers never hand out the same id; the file then
// keeps the end of the last block as a floor, so that ids stay unique even
// against a coordinator that lost its state.
type producerIDs struct {
	mu     sync.Mutex
	path   string
	next   int64 // next id to hand out
	end    int64 // first id not reserved on disk
	remote *idBlocks
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
func (p *producerIDs) allocate(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.end {
		if p.remote == nil {
			if err := p.reserve(p.next + producerIDBlock); err != nil {
				return 0, err
			}
		} else {
			start, err := p.remote.reserve(ctx, p.end)
			if err != nil {
				return 0, err
			}
			if err := p.reserve(start + producerIDBlock); err != nil {
				return 0, err
			}
			p.next = start
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

func (p *producerIDs) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.remote != nil {
		p.remote.close()
	}
}

// idBlocks reserves producer id blocks at producerIDBlockPath through a
// coordination session of its own, opened on first use and again after
// the previous one ended.
type idBlocks struct {
	connect  coord.SessionFactory
	brokerID int32
	session  coord.Session
}

type idBlockRecord struct {
	Version    int    `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

// reserve claims the block after the last one any broker claimed, starting
// no lower than floor, and returns its first id.
func (r *idBlocks) reserve(ctx context.Context, floor int64) (int64, error) {
	var last error
	for range producerIDBlockAttempts {
		if r.session == nil {
			s, err := r.connect(ctx)
			if err != nil {
				return 0, fmt.Errorf("broker: reserving producer ids: %w", err)
			}
			r.session = s
		}
		start, err := r.try(ctx, floor)
		if err == nil {
			return start, nil
		}
		last = err
		switch {
		case errors.Is(err, coord.ErrSessionExpired), errors.Is(err, coord.ErrClosed):
			_ = r.session.Close()
			r.session = nil
		case errors.Is(err, coord.ErrBadVersion), errors.Is(err, coord.ErrNodeExists):
		default:
			return 0, fmt.Errorf("broker: reserving producer ids: %w", err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return 0, fmt.Errorf("broker: reserving producer ids: %w", last)
}

func (r *idBlocks) try(ctx context.Context, floor int64) (int64, error) {
	data, st, err := r.session.Get(ctx, producerIDBlockPath)
	exists := err == nil
	if err != nil && !errors.Is(err, coord.ErrNoNode) {
		return 0, err
	}
	start := floor
	if exists {
		end, err := parseBlockEnd(data)
		if err != nil {
			return 0, err
		}
		start = max(start, end+1)
	}
	rec, _ := json.Marshal(idBlockRecord{
		Version: 1, Broker: r.brokerID,
		BlockStart: strconv.FormatInt(start, 10),
		BlockEnd:   strconv.FormatInt(start+producerIDBlock-1, 10),
	})
	if exists {
		_, err = r.session.Set(ctx, producerIDBlockPath, rec, st.Version)
	} else {
		_, err = r.session.Create(ctx, producerIDBlockPath, rec, coord.Persistent)
	}
	return start, err
}

func (r *idBlocks) close() {
	if r.session != nil {
		_ = r.session.Close()
		r.session = nil
	}
}

// SeedProducerIDs raises the coordinator's latest producer id block above
// every id the brokers have reserved on disk (their producer-ids files), so
// that no broker of the cluster hands out an id issued before. A process
// that runs several brokers on an in-process coordinator, which starts
// empty (tributary dev), calls it after New and before Start: each
// broker's file alone only keeps that broker from repeating its own ids,
// not from taking a block another broker used before the restart. The
// brokers must share one coordinator; the first one's is used.
func SeedProducerIDs(ctx context.Context, brokers ...*Broker) error {
	if len(brokers) == 0 {
		return nil
	}
	var floor int64
	var from int32
	for _, b := range brokers {
		b.pids.mu.Lock()
		if b.pids.end > floor {
			floor, from = b.pids.end, b.cfg.BrokerID
		}
		b.pids.mu.Unlock()
	}
	if floor == 0 {
		return nil
	}
	r := &idBlocks{connect: brokers[0].connect, brokerID: from}
	defer r.close()
	return r.raise(ctx, floor)
}

// raise makes the recorded block end at least floor-1, so that the next
// block any broker reserves starts at floor or later. It never lowers it.
func (r *idBlocks) raise(ctx context.Context, floor int64) error {
	var last error
	for range producerIDBlockAttempts {
		if r.session == nil {
			s, err := r.connect(ctx)
			if err != nil {
				return fmt.Errorf("broker: seeding producer ids: %w", err)
			}
			r.session = s
		}
		err := r.tryRaise(ctx, floor)
		if err == nil {
			return nil
		}
		last = err
		switch {
		case errors.Is(err, coord.ErrSessionExpired), errors.Is(err, coord.ErrClosed):
			_ = r.session.Close()
			r.session = nil
		case errors.Is(err, coord.ErrBadVersion), errors.Is(err, coord.ErrNodeExists):
		default:
			return fmt.Errorf("broker: seeding producer ids: %w", err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("broker: seeding producer ids: %w", last)
}

func (r *idBlocks) tryRaise(ctx context.Context, floor int64) error {
	data, st, err := r.session.Get(ctx, producerIDBlockPath)
	exists := err == nil
	if err != nil && !errors.Is(err, coord.ErrNoNode) {
		return err
	}
	if exists {
		end, err := parseBlockEnd(data)
		if err != nil {
			return err
		}
		if end+1 >= floor {
			return nil
		}
	}
	// The record names the block the file's floor ends, as if the broker
	// had just reserved it.
	rec, _ := json.Marshal(idBlockRecord{
		Version: 1, Broker: r.brokerID,
		BlockStart: strconv.FormatInt(max(0, floor-producerIDBlock), 10),
		BlockEnd:   strconv.FormatInt(floor-1, 10),
	})
	if exists {
		_, err = r.session.Set(ctx, producerIDBlockPath, rec, st.Version)
	} else {
		_, err = r.session.Create(ctx, producerIDBlockPath, rec, coord.Persistent)
	}
	return err
}

// parseBlockEnd returns the inclusive block_end of a block record.
func parseBlockEnd(data []byte) (int64, error) {
	var rec idBlockRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return 0, fmt.Errorf("%s holds %q: %w", producerIDBlockPath, data, err)
	}
	end, err := strconv.ParseInt(rec.BlockEnd, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s holds %q: block_end: %w", producerIDBlockPath, data, err)
	}
	return end, nil
}
