package group

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/tributary/tributary/internal/coord"
)

// ZooKeeperRegistry mirrors offsets into the paper's consumer registry,
// /consumers/<group>/offsets/<topic>/<partition>, holding the decimal next
// offset to consume (the format of Kafka 0.8 and of this repository's
// client), so that ZooKeeper-group consumers and tools reading ZooKeeper
// (Burrow, the paper's tooling) see what Kafka-protocol groups commit.
// Groups whose names are not valid ZooKeeper node names are skipped.
type ZooKeeperRegistry struct {
	connect coord.SessionFactory

	mu     sync.Mutex
	s      coord.Session
	closed bool
}

// NewZooKeeperRegistry returns a registry that opens its own session with
// connect on first use, and a new one after the session ends.
func NewZooKeeperRegistry(connect coord.SessionFactory) *ZooKeeperRegistry {
	return &ZooKeeperRegistry{connect: connect}
}

func offsetsPath(group string) string { return coord.Join("/consumers", group, "offsets") }

func offsetPath(group, topic string, p int32) string {
	return coord.Join("/consumers", group, "offsets", topic, strconv.Itoa(int(p)))
}

func (r *ZooKeeperRegistry) session(ctx context.Context) (coord.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, coord.ErrClosed
	}
	if r.s != nil {
		return r.s, nil
	}
	s, err := r.connect(ctx)
	if err != nil {
		return nil, err
	}
	r.s = s
	return s, nil
}

// retry runs op on the session, once more on a new session if the first
// one had ended.
func (r *ZooKeeperRegistry) retry(ctx context.Context, op func(coord.Session) error) error {
	for attempt := 0; ; attempt++ {
		s, err := r.session(ctx)
		if err != nil {
			return err
		}
		err = op(s)
		if attempt == 0 && (errors.Is(err, coord.ErrSessionExpired) || errors.Is(err, coord.ErrClosed)) {
			r.mu.Lock()
			if r.s == s {
				r.s = nil
			}
			r.mu.Unlock()
			_ = s.Close()
			continue
		}
		return err
	}
}

// Store writes the offsets in one multi-op when their nodes exist (the
// usual case after the first commit), else node by node.
func (r *ZooKeeperRegistry) Store(ctx context.Context, group string, offsets []RegistryOffset) error {
	if coord.ValidatePath(offsetsPath(group)) != nil || strings.Contains(group, "/") {
		return nil
	}
	return r.retry(ctx, func(s coord.Session) error {
		ops := make([]coord.Op, len(offsets))
		for i, o := range offsets {
			ops[i] = coord.Op{Kind: coord.OpSet, Path: offsetPath(group, o.Topic, o.Partition),
				Data: []byte(strconv.FormatInt(o.Offset, 10)), Version: coord.AnyVersion}
		}
		err := s.Multi(ctx, ops...)
		if !errors.Is(err, coord.ErrNoNode) {
			return err
		}
		for _, op := range ops {
			_, err := s.Set(ctx, op.Path, op.Data, coord.AnyVersion)
			if errors.Is(err, coord.ErrNoNode) {
				_, err = s.CreateAll(ctx, op.Path, op.Data, coord.Persistent)
				if errors.Is(err, coord.ErrNodeExists) {
					_, err = s.Set(ctx, op.Path, op.Data, coord.AnyVersion)
				}
			}
			if err != nil {
				return fmt.Errorf("writing %s: %w", op.Path, err)
			}
		}
		return nil
	})
}

// Remove deletes offset nodes, and topic nodes left empty.
func (r *ZooKeeperRegistry) Remove(ctx context.Context, group string, tps []TopicPartition) error {
	if coord.ValidatePath(offsetsPath(group)) != nil || strings.Contains(group, "/") {
		return nil
	}
	return r.retry(ctx, func(s coord.Session) error {
		if tps == nil {
			topics, _, err := s.Children(ctx, offsetsPath(group))
			if errors.Is(err, coord.ErrNoNode) {
				return nil
			}
			if err != nil {
				return err
			}
			for _, t := range topics {
				parts, _, err := s.Children(ctx, coord.Join(offsetsPath(group), t))
				if err != nil && !errors.Is(err, coord.ErrNoNode) {
					return err
				}
				for _, p := range parts {
					n, err := strconv.ParseInt(p, 10, 32)
					if err == nil {
						tps = append(tps, TopicPartition{t, int32(n)})
					}
				}
			}
		}
		topics := map[string]bool{}
		for _, tp := range tps {
			topics[tp.Topic] = true
			err := s.Delete(ctx, offsetPath(group, tp.Topic, tp.Partition), coord.AnyVersion)
			if err != nil && !errors.Is(err, coord.ErrNoNode) {
				return err
			}
		}
		for t := range topics {
			err := s.Delete(ctx, coord.Join(offsetsPath(group), t), coord.AnyVersion)
			if err != nil && !errors.Is(err, coord.ErrNoNode) && !errors.Is(err, coord.ErrNotEmpty) {
				return err
			}
		}
		return nil
	})
}

// Load reads the offsets of the owned groups.
func (r *ZooKeeperRegistry) Load(ctx context.Context, owns func(group string) bool) (map[string][]RegistryOffset, error) {
	out := map[string][]RegistryOffset{}
	err := r.retry(ctx, func(s coord.Session) error {
		groups, _, err := s.Children(ctx, "/consumers")
		if errors.Is(err, coord.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, g := range groups {
			if !owns(g) {
				continue
			}
			topics, _, err := s.Children(ctx, offsetsPath(g))
			if errors.Is(err, coord.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			for _, t := range topics {
				parts, _, err := s.Children(ctx, coord.Join(offsetsPath(g), t))
				if err != nil && !errors.Is(err, coord.ErrNoNode) {
					return err
				}
				for _, p := range parts {
					n, err := strconv.ParseInt(p, 10, 32)
					if err != nil {
						continue
					}
					data, st, err := s.Get(ctx, offsetPath(g, t, int32(n)))
					if errors.Is(err, coord.ErrNoNode) {
						continue
					}
					if err != nil {
						return err
					}
					off, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
					if err != nil {
						continue
					}
					out[g] = append(out[g], RegistryOffset{TopicPartition: TopicPartition{t, int32(n)}, Offset: off, Modified: st.Modified})
				}
			}
		}
		return nil
	})
	return out, err
}

// Close ends the registry's session; later calls fail with coord.ErrClosed.
func (r *ZooKeeperRegistry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.s == nil {
		return nil
	}
	err := r.s.Close()
	r.s = nil
	return err
}
