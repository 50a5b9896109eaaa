package loader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
)

// owners splits a job's partitions between its loader processes through
// ZooKeeper, in the layout of the paper's consumer registries:
//
//	/loaders/<job>/members/<instance>          ephemeral, one per process
//	/loaders/<job>/owners/<topic>/<partition>  ephemeral, the partition's loader
//
// A partition is loaded (recovered, read, committed) only by the process
// holding its owner node, so no two processes ever write a partition's
// files or manifests at once.
type owners struct {
	s        *zkcoord.Session
	job      string
	instance string
	lost     atomic.Bool
}

func connectOwners(ctx context.Context, cfg Config) (*owners, error) {
	s, err := zkcoord.Connect(ctx, cfg.ZooKeeperConnect, zkcoord.Config{SessionTimeout: cfg.ZKSessionTimeout, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("zookeeper.connect %s: %w", cfg.ZooKeeperConnect, err)
	}
	o := &owners{s: s, job: cfg.Name, instance: cfg.Instance}
	go func() {
		for st := range s.States() {
			if st == coord.StateExpired {
				o.lost.Store(true)
			}
		}
	}()
	if _, err := s.CreateAll(ctx, o.memberPath(), []byte(cfg.Instance), coord.Ephemeral); err != nil {
		s.Close()
		if errors.Is(err, coord.ErrNodeExists) {
			return nil, fmt.Errorf("loader instance %q of job %q is already registered in ZooKeeper", cfg.Instance, cfg.Name)
		}
		return nil, fmt.Errorf("register loader in ZooKeeper: %w", err)
	}
	return o, nil
}

func (o *owners) base() string       { return "/loaders/" + o.job }
func (o *owners) memberPath() string { return o.base() + "/members/" + o.instance }
func (o *owners) ownerPath(topic string, p int32) string {
	return o.base() + "/owners/" + topic + "/" + strconv.Itoa(int(p))
}

// members waits until at least n processes registered (or wait passed)
// and returns the sorted member list and this process's rank in it.
func (o *owners) members(ctx context.Context, n int, wait time.Duration) ([]string, int, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		kids, _, ev, err := o.s.ChildrenW(ctx, o.base()+"/members")
		if err != nil {
			return nil, 0, err
		}
		slices.Sort(kids)
		if len(kids) >= n {
			return kids, slices.Index(kids, o.instance), nil
		}
		select {
		case <-ev:
		case <-deadline.C:
			return kids, slices.Index(kids, o.instance), nil
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// claim takes a partition if no process holds it. A node this session
// owns is this process's already: a release or a create whose outcome was
// unknown (a ZooKeeper server lost mid-request) left it, and waiting for it
// to go away would wait for ever.
func (o *owners) claim(ctx context.Context, topic string, p int32) (bool, error) {
	_, err := o.s.CreateAll(ctx, o.ownerPath(topic, p), []byte(o.instance), coord.Ephemeral)
	if errors.Is(err, coord.ErrNodeExists) {
		_, st, gerr := o.s.Get(ctx, o.ownerPath(topic, p))
		if errors.Is(gerr, coord.ErrNoNode) {
			return false, nil // released meanwhile: the next pass claims it
		}
		return gerr == nil && st.EphemeralOwner == o.s.ID(), gerr
	}
	return err == nil, err
}

// release gives a partition up.
func (o *owners) release(ctx context.Context, topic string, p int32) error {
	err := o.s.Delete(ctx, o.ownerPath(topic, p), coord.AnyVersion)
	if errors.Is(err, coord.ErrNoNode) {
		return nil
	}
	return err
}

// waitFree returns once a partition's owner node is gone (its holder
// finished, or its session expired).
func (o *owners) waitFree(ctx context.Context, topic string, p int32) error {
	for {
		ok, _, ev, err := o.s.ExistsW(ctx, o.ownerPath(topic, p))
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		select {
		case <-ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// check fails once the session that holds the partitions has expired:
// another process may own them by now, so nothing may be committed.
func (o *owners) check() error {
	if o.lost.Load() {
		return ErrLostOwnership
	}
	return nil
}

func (o *owners) close() error { return o.s.Close() }
