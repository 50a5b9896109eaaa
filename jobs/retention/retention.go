package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// ErrInvalidConfig: a Config field is invalid; the message names it.
var ErrInvalidConfig = errors.New("retention: invalid configuration")

// Config configures a retention run.
type Config struct {
	FS   filesys.FS
	Base string
	// MaxAge applies to every topic without its own entry in Topics; 0
	// keeps those topics forever.
	MaxAge time.Duration
	// Topics maps a topic to its own age.
	Topics map[string]time.Duration
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Catalog, when set, is synced before expired hours are deleted, with
	// the published partitions of the files less those hours (so it never
	// points at a deleted location).
	Catalog hours.Catalog
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.FS == nil || c.Base == "" {
		return fmt.Errorf("%w: FS and Base are required", ErrInvalidConfig)
	}
	if c.MaxAge < 0 {
		return fmt.Errorf("%w: max age %v is negative", ErrInvalidConfig, c.MaxAge)
	}
	if c.MaxAge == 0 && len(c.Topics) == 0 {
		return fmt.Errorf("%w: give a max age, per-topic ages or both", ErrInvalidConfig)
	}
	for t, d := range c.Topics {
		if d <= 0 {
			return fmt.Errorf("%w: topic %s: age %v must be positive", ErrInvalidConfig, t, d)
		}
	}
	return nil
}

// Removed is one deleted hour.
type Removed struct {
	Hour  string `json:"hour"` // topic/yyyy/MM/dd/HH[/mm]
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

// Summary is what a run removed; the job's summary in the history.
type Summary struct {
	HoursRemoved int       `json:"hours_removed"`
	FilesRemoved int       `json:"files_removed"`
	BytesRemoved int64     `json:"bytes_removed"`
	Removed      []Removed `json:"removed,omitempty"`
}

// Run deletes every expired hour.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	var sum Summary
	if err := cfg.Validate(); err != nil {
		return sum, err
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	topics, err := hours.Topics(cfg.FS, cfg.Base)
	if err != nil {
		return sum, err
	}
	sort.Strings(topics)
	t0 := now()
	for _, topic := range topics {
		age, ok := cfg.Topics[topic]
		if !ok {
			age = cfg.MaxAge
		}
		if age <= 0 {
			continue
		}
		list, err := hours.List(cfg.FS, cfg.Base, topic)
		if err != nil {
			return sum, err
		}
		layout, err := hours.ReadLayout(cfg.FS, cfg.Base, topic)
		if err != nil {
			return sum, err
		}
		touched := map[string]bool{}
		var expired []hours.Hour
		skip := map[string]bool{}
		for _, h := range list {
			if !h.End().Add(age).After(t0) {
				expired = append(expired, h)
				skip[h.Dir] = true
			}
		}
		if len(expired) > 0 && cfg.Catalog != nil {
			if err := hours.SyncCatalog(ctx, cfg.Catalog, cfg.FS, cfg.Base, topic, skip); err != nil {
				return sum, fmt.Errorf("retention: %s: catalog sync before deleting %d hours: %w", topic, len(expired), err)
			}
		}
		for _, h := range expired {
			if err := ctx.Err(); err != nil {
				return sum, err
			}
			files, bytes, err := size(cfg.FS, h)
			if err != nil {
				return sum, err
			}
			// Generation directories first: a crash in between leaves the
			// hour listed, and the next run deletes the rest.
			gens, err := hours.Generations(cfg.FS, h)
			if err != nil {
				return sum, err
			}
			for _, gen := range gens {
				if err := cfg.FS.RemoveAll(hours.GenerationDir(h, gen)); err != nil {
					return sum, fmt.Errorf("retention: remove %s generation %d: %w", h, gen, err)
				}
			}
			if err := cfg.FS.RemoveAll(h.Dir); err != nil {
				return sum, fmt.Errorf("retention: remove %s: %w", h, err)
			}
			log.Info("removed expired hour", "hour", h.String(), "files", files, "bytes", bytes)
			sum.HoursRemoved++
			sum.FilesRemoved += files
			sum.BytesRemoved += bytes
			sum.Removed = append(sum.Removed, Removed{Hour: h.String(), Files: files, Bytes: bytes})
			touched[path.Dir(h.Dir)] = true
		}
		// Remove emptied parents of the partition directories (day, month
		// and year in the default layout), deepest first, never the topic's.
		for dir := range touched {
			for d, i := dir, 0; i < layout.Depth()-1; d, i = path.Dir(d), i+1 {
				list, err := cfg.FS.ReadDir(d)
				if err != nil || len(list) > 0 {
					break
				}
				if err := cfg.FS.Remove(d); err != nil {
					break
				}
			}
		}
	}
	return sum, nil
}

// size counts an hour's data files and bytes (markers and staging aside),
// its generation directories' included.
func size(fsys filesys.FS, h hours.Hour) (int, int64, error) {
	gens, err := hours.Generations(fsys, h)
	if err != nil {
		return 0, 0, err
	}
	dirs := []string{h.Dir}
	for _, g := range gens {
		dirs = append(dirs, hours.GenerationDir(h, g))
	}
	var n int
	var b int64
	for _, dir := range dirs {
		list, err := fsys.ReadDir(dir)
		if err != nil {
			return 0, 0, err
		}
		for _, fi := range list {
			if !fi.IsDir() && hours.IsData(fi.Name()) {
				n++
				b += fi.Size()
			}
		}
	}
	return n, b, nil
}
