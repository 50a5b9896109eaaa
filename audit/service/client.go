package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tributary/tributary/hours"
)

// Client reads an audit service's HTTP API (the readiness checks of
// compaction and `tributary loader hours` use it). A URL with user:pass@
// authenticates with basic authentication.
type Client struct {
	base string
	http *http.Client
}

// NewClient returns a client of the audit service at baseURL
// (http://host:port); hc nil means a client with a 30 s timeout.
func NewClient(baseURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("audit service URL %q: want http://host:port or https://host:port", baseURL)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), http: hc}, nil
}

// Topics returns the topics the service has counts of, sorted.
func (c *Client) Topics(ctx context.Context) ([]string, error) {
	var out struct {
		Topics []string `json:"topics"`
	}
	err := c.get(ctx, "/api/topics", &out)
	return out.Topics, err
}

// Windows returns the topic's window reports with window_start in [from, to).
func (c *Client) Windows(ctx context.Context, topic string, from, to time.Time) ([]WindowReport, error) {
	q := url.Values{"from": {from.UTC().Format(time.RFC3339)}, "to": {to.UTC().Format(time.RFC3339)}}
	var out []WindowReport
	err := c.get(ctx, "/api/topics/"+url.PathEscape(topic)+"/windows?"+q.Encode(), &out)
	if errors.Is(err, ErrNotFound) {
		return nil, nil // the service has never heard of the topic
	}
	return out, err
}

// LoaderWindows is Windows as the readiness check takes it: each window's
// producer and loader tier totals.
func (c *Client) LoaderWindows(ctx context.Context, topic string, from, to time.Time) ([]hours.AuditWindow, error) {
	reps, err := c.Windows(ctx, topic, from, to)
	if err != nil {
		return nil, err
	}
	return loaderWindows(reps), nil
}

func (c *Client) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("audit service: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("audit service: %s: %w", path, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: GET %s: %s", ErrNotFound, path, strings.TrimSpace(string(b)))
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("audit service: GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("audit service: GET %s: %w", path, err)
	}
	return nil
}
