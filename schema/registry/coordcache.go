package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// The subject cache of a CoordStore. Watches are one-shot, so each pending
// watch is remembered (listArmed, dataArmed, childArmed) and re-armed only
// by the loop after it fired: a watch per node at a time, not one per read.
// Reads after a local write (CreateVersion, ...) refresh without watches, so
// a process always sees its own writes at once and others' within a watch
// round trip.

// watch waits for one event in its own goroutine and queues the refresh.
func (s *CoordStore) watch(ch <-chan coord.Event, r refresh) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if ev.Type == coord.EventSessionLost {
				s.sessionLost()
				return
			}
			s.enqueue(r)
		case <-s.ctx.Done():
		}
	}()
}

func (s *CoordStore) enqueue(r refresh) {
	select {
	case s.queue <- r:
	case <-s.ctx.Done():
	}
}

func (s *CoordStore) sessionLost() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lost {
		s.lost = true
		s.log.Error("schema registry store: coordination session lost; the store serves nothing more")
	}
}

// loop applies the refreshes that fired watches ask for, one at a time.
func (s *CoordStore) loop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case r := <-s.queue:
			var err error
			switch r.kind {
			case refreshList:
				s.mu.Lock()
				s.listArmed = false
				s.mu.Unlock()
				err = s.refreshList(s.ctx)
			case refreshSubjectData, refreshSubjectChildren:
				s.mu.Lock()
				if st := s.subjects[r.subject]; st != nil {
					if r.kind == refreshSubjectData {
						st.dataArmed = false
					} else {
						st.childArmed = false
					}
				}
				s.mu.Unlock()
				err = s.refreshSubject(s.ctx, r.subject, r.kind == refreshSubjectData, r.kind == refreshSubjectChildren)
			case refreshRetry:
				err = s.refreshList(s.ctx)
			}
			if err != nil && s.ctx.Err() == nil {
				if errors.Is(err, coord.ErrSessionExpired) || errors.Is(err, coord.ErrClosed) {
					s.sessionLost()
					return
				}
				// Re-arm from scratch after a pause: refreshList re-reads every
				// subject whose watches are not pending.
				s.log.Warn("schema registry cache refresh failed; retrying", "err", err)
				s.mu.Lock()
				s.listArmed = false
				s.mu.Unlock()
				go func() {
					select {
					case <-time.After(s.backoff):
						s.enqueue(refresh{kind: refreshRetry})
					case <-s.ctx.Done():
					}
				}()
			}
		}
	}
}

// refreshList reads the subject list, drops subjects that are gone and
// loads (with watches) those the cache does not watch yet.
func (s *CoordStore) refreshList(ctx context.Context) error {
	s.mu.RLock()
	arm := !s.listArmed
	s.mu.RUnlock()
	var (
		names []string
		ch    <-chan coord.Event
		err   error
	)
	if arm {
		names, _, ch, err = s.sess.ChildrenW(ctx, s.path(subjectsNode))
	} else {
		names, _, err = s.sess.Children(ctx, s.path(subjectsNode))
	}
	if err != nil {
		return storeErr("list subjects", err)
	}
	if arm {
		s.mu.Lock()
		s.listArmed = true
		s.mu.Unlock()
		s.watch(ch, refresh{kind: refreshList})
	}
	present := map[string]bool{}
	var load []string
	s.mu.Lock()
	for _, e := range names {
		name, err := unescapeName(e)
		if err != nil {
			s.log.Warn("schema registry: skipping subject node with a bad name", "node", e)
			continue
		}
		present[name] = true
		if st := s.subjects[name]; st == nil || !st.dataArmed || !st.childArmed {
			load = append(load, name)
		}
	}
	for name := range s.subjects {
		if !present[name] {
			delete(s.subjects, name)
		}
	}
	s.mu.Unlock()
	for _, name := range load {
		if err := s.refreshSubject(ctx, name, true, true); err != nil {
			return err
		}
	}
	return nil
}

// refreshSubject re-reads one subject. armData/armChildren ask for a watch
// on the subject node / its versions node unless one is already pending.
func (s *CoordStore) refreshSubject(ctx context.Context, subject string, armData, armChildren bool) error {
	s.mu.RLock()
	prev := s.subjects[subject]
	if prev != nil {
		armData = armData && !prev.dataArmed
		armChildren = armChildren && !prev.childArmed
	}
	var prevCopy subjectState
	if prev != nil {
		prevCopy = *prev
		prevCopy.versions = slices.Clone(prev.versions)
	}
	s.mu.RUnlock()

	var (
		dataStat, childStat coord.Stat
		dataCh, childCh     <-chan coord.Event
		names               []string
		err                 error
	)
	// The subject node is read before its versions: a soft delete touches
	// both atomically, so versions read after it are at least as new.
	if armData {
		_, dataStat, dataCh, err = s.sess.GetW(ctx, s.subjectPath(subject))
	} else {
		_, dataStat, err = s.sess.Get(ctx, s.subjectPath(subject))
	}
	subjectNode := err == nil
	if err == nil {
		if armChildren {
			names, childStat, childCh, err = s.sess.ChildrenW(ctx, s.subjectPath(subject, versionsNode))
		} else {
			names, childStat, err = s.sess.Children(ctx, s.subjectPath(subject, versionsNode))
		}
	}
	if errors.Is(err, coord.ErrNoNode) {
		s.mu.Lock()
		delete(s.subjects, subject)
		s.mu.Unlock()
		if dataCh != nil {
			// The node vanished between the two reads; its watch would
			// point at a subject no longer cached.
			s.watch(dataCh, refresh{kind: refreshList})
		}
		if subjectNode {
			// The subject node is there without its versions node: a
			// writer that creates them one by one is half way (ours create
			// them in one multi-op, DeleteVersion removes them in one).
			// The list watch fired for the subject node already, so only a
			// watch on the versions node brings the subject back.
			return s.watchVersionsNode(ctx, subject)
		}
		return nil
	}
	if err != nil {
		return storeErr("read subject "+subject, err)
	}

	fresh := &subjectState{created: dataStat.Created, dataVersion: dataStat.Version, childVersion: childStat.CVersion}
	known := map[int]VersionRecord{}
	if prev != nil && prevCopy.created.Equal(dataStat.Created) && prevCopy.dataVersion == dataStat.Version {
		// No soft delete since: the cached flags are current.
		for _, v := range prevCopy.versions {
			known[v.Version] = v
		}
	}
	for _, e := range names {
		n, err := strconv.Atoi(e)
		if err != nil {
			continue
		}
		if v, ok := known[n]; ok {
			fresh.versions = append(fresh.versions, v)
			continue
		}
		data, _, err := s.sess.Get(ctx, s.subjectPath(subject, versionsNode, e))
		if errors.Is(err, coord.ErrNoNode) {
			continue // permanently deleted meanwhile
		}
		if err != nil {
			return storeErr("read version", err)
		}
		var cv coordVersion
		if err := json.Unmarshal(data, &cv); err != nil {
			return fmt.Errorf("%w: %q version %s: %v", ErrStore, subject, e, err)
		}
		fresh.versions = append(fresh.versions, VersionRecord{Version: n, ID: cv.ID, Deleted: cv.Deleted})
	}
	slices.SortFunc(fresh.versions, func(a, b VersionRecord) int { return a.Version - b.Version })

	s.mu.Lock()
	cur := s.subjects[subject]
	if cur == nil || fresh.newerThan(cur) {
		if cur != nil {
			fresh.dataArmed, fresh.childArmed = cur.dataArmed, cur.childArmed
		}
		s.subjects[subject] = fresh
		cur = fresh
	}
	cur.dataArmed = cur.dataArmed || armData
	cur.childArmed = cur.childArmed || armChildren
	s.mu.Unlock()
	if dataCh != nil {
		s.watch(dataCh, refresh{kind: refreshSubjectData, subject: subject})
	}
	if childCh != nil {
		s.watch(childCh, refresh{kind: refreshSubjectChildren, subject: subject})
	}
	return nil
}

// watchVersionsNode asks for a list refresh once a subject's versions node
// exists: at once if it appeared meanwhile, else when it is created.
func (s *CoordStore) watchVersionsNode(ctx context.Context, subject string) error {
	ok, _, ch, err := s.sess.ExistsW(ctx, s.subjectPath(subject, versionsNode))
	if err != nil {
		return storeErr("watch subject "+subject, err)
	}
	if ok {
		go s.enqueue(refresh{kind: refreshList})
	}
	s.watch(ch, refresh{kind: refreshList})
	return nil
}
