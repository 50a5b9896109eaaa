package partlog

import "errors"

// ReadBelow is Read restricted to whole batches whose last offset is below
// limit (a consumer's fetch below the high watermark): the view starts with
// the batch containing offset and stops before the first batch that ends at
// or past limit. It is empty (Len() == 0, nothing to release) when that
// first batch already does, and when offset >= limit, which is not an
// error. Offsets below the log start give ErrOffsetOutOfRange, as in Read.
func (l *Log) ReadBelow(offset int64, maxBytes int, limit int64) (*View, error) {
	if start := l.StartOffset(); offset >= limit && offset >= start {
		return &View{}, nil
	}
	for attempt := 0; ; attempt++ {
		gen := l.truncations.Load()
		v, err := l.Read(offset, maxBytes)
		if err != nil || v.Len() == 0 {
			return v, err
		}
		end, err := v.cutBelow(limit)
		if err != nil {
			v.Release()
			if attempt < 100 && l.truncationRaced(gen) {
				continue
			}
			return nil, err
		}
		if end == v.pos {
			v.Release()
			return &View{}, nil
		}
		v.n = end - v.pos
		return v, nil
	}
}

// cutBelow returns the file position where the view must end so that it
// holds only batches whose last offset is below limit. The segment's own
// lookup finds the batch containing limit through the index, so the walk is
// short whatever the view's size; the view's bytes are already verified.
func (v *View) cutBelow(limit int64) (int64, error) {
	s, viewEnd := v.seg, v.pos+v.n
	pos, _, found, err := s.find(v.file, limit, viewEnd)
	if err != nil && errors.Is(err, errIndexSuspect) {
		// An index entry read from disk led astray: walk the view instead.
		return v.walkBelow(limit)
	}
	if err != nil {
		return 0, err
	}
	if !found {
		return viewEnd, nil
	}
	return max(pos, v.pos), nil
}

func (v *View) walkBelow(limit int64) (int64, error) {
	end := v.pos + v.n
	for pos := v.pos; pos < end; {
		h, err := headerAt(v.file, pos, end)
		if err != nil {
			return 0, err
		}
		if h.lastOffset() >= limit {
			return pos, nil
		}
		pos += h.size
	}
	return end, nil
}
