package service

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed dashboard.html
var dashboardHTML []byte

var zeroTime time.Time

// Handler serves the HTTP API, /metrics and the dashboard.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(dashboardHTML)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /api/topics", func(w http.ResponseWriter, _ *http.Request) {
		topics, err := s.Topics()
		if err != nil {
			httpError(w, err)
			return
		}
		if topics == nil {
			topics = []string{}
		}
		writeJSON(w, map[string]any{"topics": topics})
	})
	mux.HandleFunc("GET /api/topics/{topic}/windows", func(w http.ResponseWriter, r *http.Request) {
		from, err := parseTime(r.URL.Query().Get("from"))
		if err != nil {
			httpError(w, fmt.Errorf("%w: from: %v", errBadRequest, err))
			return
		}
		to, err := parseTime(r.URL.Query().Get("to"))
		if err != nil {
			httpError(w, fmt.Errorf("%w: to: %v", errBadRequest, err))
			return
		}
		reps, err := s.Windows(r.PathValue("topic"), from, to)
		if err != nil {
			httpError(w, err)
			return
		}
		writeJSON(w, reps)
	})
	mux.HandleFunc("GET /api/topics/{topic}/partitions", s.handlePartitions)
	mux.HandleFunc("GET /api/topics/{topic}/windows/{start}", func(w http.ResponseWriter, r *http.Request) {
		start, err := parseTime(r.PathValue("start"))
		if err != nil || start.IsZero() {
			httpError(w, fmt.Errorf("%w: window start %q: want RFC 3339 or Unix ms", errBadRequest, r.PathValue("start")))
			return
		}
		b, err := s.Breakdown(r.PathValue("topic"), start)
		if err != nil {
			httpError(w, err)
			return
		}
		writeJSON(w, b)
	})
	return mux
}

var errBadRequest = errors.New("bad request")

// parseTime reads RFC 3339 or Unix milliseconds; "" is the zero time.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func httpError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}
