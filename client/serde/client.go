package serde

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary/tributary/internal/security"
)

// Registry is what the serde needs from a schema registry.
type Registry interface {
	// Register returns the id of schema under subject, registering it if new.
	Register(ctx context.Context, subject, schema string) (int, error)
	// SchemaByID returns the schema text with the id (ErrUnknownSchema if none).
	SchemaByID(ctx context.Context, id int) (string, error)
}

// Reference is a schema reference as the registry reports it: the full name
// of an Avro named type and the subject version defining it.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// RegisteredSchema is a schema with its references.
type RegisteredSchema struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType"`
	References []Reference `json:"references"`
}

// ReferenceRegistry is a Registry that also reports schema references; a
// Deserializer given one decodes payloads whose writer schema uses types
// of other schemas. RegistryClient is one.
type ReferenceRegistry interface {
	Registry
	// SchemaWithReferences returns the schema with the id and its references.
	SchemaWithReferences(ctx context.Context, id int) (RegisteredSchema, error)
	// SubjectVersion returns one version of a subject.
	SubjectVersion(ctx context.Context, subject string, version int) (RegisteredSchema, error)
}

// ClientConfig configures a RegistryClient.
type ClientConfig struct {
	// URL is the registry's base URL, "http://host:8081". Required.
	URL string
	// HTTPClient sends the requests; nil means a client with Timeout.
	HTTPClient *http.Client
	// Timeout bounds each request when HTTPClient is nil; 0 means 10s.
	Timeout time.Duration
	// Username and Password are sent with basic authentication when
	// Username is set (basic.auth.user.info=user:password).
	Username, Password string
	// TLS is the schema.registry.ssl.* settings of an https URL (trust,
	// and a key pair for client certificates) when HTTPClient is nil; the
	// zero value trusts the system roots.
	TLS security.TLS
}

// Validate checks the configuration.
func (c ClientConfig) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("serde client config: URL %q is not an http(s) URL", c.URL)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("serde client config: Timeout %v is negative", c.Timeout)
	}
	if u.User != nil {
		return fmt.Errorf("serde client config: URL %q: give credentials as basic.auth.user.info, not in the URL", u.Redacted())
	}
	if strings.Contains(c.Username, ":") {
		return errors.New("serde client config: basic.auth.user.info: the user name may not hold a colon")
	}
	return nil
}

// RegistryClient speaks the Confluent Schema Registry REST API. It caches
// the id of each (subject, schema text) it registered and every schema it
// fetched by id: neither can change.
type RegistryClient struct {
	base string
	http *http.Client
	user string
	pass string

	mu       sync.RWMutex
	ids      map[[2]string]int
	schemas  map[int]string
	full     map[int]RegisteredSchema
	versions map[subjectVersion]RegisteredSchema
}

// subjectVersion keys the version cache: a version number names one schema
// for as long as it exists, and a referenced one cannot be deleted.
type subjectVersion struct {
	subject string
	version int
}

var _ ReferenceRegistry = (*RegistryClient)(nil)

// NewRegistryClient returns a client of the registry at cfg.URL.
func NewRegistryClient(cfg ClientConfig) (*RegistryClient, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		timeout := cfg.Timeout
		if timeout == 0 {
			timeout = 10 * time.Second
		}
		hc = &http.Client{Timeout: timeout}
		if strings.HasPrefix(cfg.URL, "https:") {
			tlsCfg, err := cfg.TLS.ClientConfig("")
			if err != nil {
				return nil, fmt.Errorf("serde client config: schema.registry.ssl.*: %w", err)
			}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.TLSClientConfig = tlsCfg
			hc.Transport = tr
		}
	}
	return &RegistryClient{
		base:     strings.TrimSuffix(cfg.URL, "/"),
		http:     hc,
		user:     cfg.Username,
		pass:     cfg.Password,
		ids:      map[[2]string]int{},
		schemas:  map[int]string{},
		full:     map[int]RegisteredSchema{},
		versions: map[subjectVersion]RegisteredSchema{},
	}, nil
}

// APIError is an error response of the registry.
type APIError struct {
	Status  int    // HTTP status
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("schema registry: HTTP %d, error %d: %s", e.Status, e.Code, e.Message)
}

// Is classifies registry error codes as the package's sentinels.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrUnknownSchema:
		return e.Code == 40403
	case ErrIncompatible:
		return e.Code == 409
	case ErrInvalidSchema:
		return e.Code == 42201
	case ErrAccessDenied:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case ErrRegistry:
		return true
	}
	return false
}

func (c *RegistryClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRegistry, err)
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json")
	if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRegistry, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRegistry, err)
	}
	if resp.StatusCode != http.StatusOK {
		apiErr := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(raw, apiErr) != nil || apiErr.Code == 0 {
			apiErr.Code, apiErr.Message = resp.StatusCode, strings.TrimSpace(string(raw))
		}
		return apiErr
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%w: bad response to %s %s: %v", ErrRegistry, method, path, err)
	}
	return nil
}

// Register registers schema under subject (or finds it) and caches the id.
func (c *RegistryClient) Register(ctx context.Context, subject, schema string) (int, error) {
	key := [2]string{subject, schema}
	c.mu.RLock()
	id, ok := c.ids[key]
	c.mu.RUnlock()
	if ok {
		return id, nil
	}
	var out struct {
		ID int `json:"id"`
	}
	err := c.do(ctx, http.MethodPost, "/subjects/"+url.PathEscape(subject)+"/versions", map[string]string{"schema": schema}, &out)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.ids[key] = out.ID
	c.schemas[out.ID] = schema
	c.mu.Unlock()
	return out.ID, nil
}

// SchemaByID fetches a schema by id, once.
func (c *RegistryClient) SchemaByID(ctx context.Context, id int) (string, error) {
	c.mu.RLock()
	s, ok := c.schemas[id]
	c.mu.RUnlock()
	if ok {
		return s, nil
	}
	var out struct {
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
	}
	if err := c.do(ctx, http.MethodGet, "/schemas/ids/"+strconv.Itoa(id), nil, &out); err != nil {
		return "", err
	}
	if out.SchemaType != "" && out.SchemaType != "AVRO" {
		return "", fmt.Errorf("%w: schema %d is %s, not AVRO", ErrInvalidSchema, id, out.SchemaType)
	}
	c.mu.Lock()
	c.schemas[id] = out.Schema
	c.mu.Unlock()
	return out.Schema, nil
}

// SchemaWithReferences fetches a schema and its references by id, once.
func (c *RegistryClient) SchemaWithReferences(ctx context.Context, id int) (RegisteredSchema, error) {
	c.mu.RLock()
	rs, ok := c.full[id]
	c.mu.RUnlock()
	if ok {
		return rs, nil
	}
	if err := c.do(ctx, http.MethodGet, "/schemas/ids/"+strconv.Itoa(id), nil, &rs); err != nil {
		return RegisteredSchema{}, err
	}
	if rs.SchemaType != "" && rs.SchemaType != "AVRO" {
		return RegisteredSchema{}, fmt.Errorf("%w: schema %d is %s, not AVRO", ErrInvalidSchema, id, rs.SchemaType)
	}
	c.mu.Lock()
	c.full[id] = rs
	c.schemas[id] = rs.Schema
	c.mu.Unlock()
	return rs, nil
}

// SubjectVersion fetches one version of a subject, once.
func (c *RegistryClient) SubjectVersion(ctx context.Context, subject string, version int) (RegisteredSchema, error) {
	key := subjectVersion{subject, version}
	c.mu.RLock()
	rs, ok := c.versions[key]
	c.mu.RUnlock()
	if ok {
		return rs, nil
	}
	path := "/subjects/" + url.PathEscape(subject) + "/versions/" + strconv.Itoa(version) + "?deleted=true"
	if err := c.do(ctx, http.MethodGet, path, nil, &rs); err != nil {
		return RegisteredSchema{}, err
	}
	if rs.SchemaType != "" && rs.SchemaType != "AVRO" {
		return RegisteredSchema{}, fmt.Errorf("%w: %s version %d is %s, not AVRO", ErrInvalidSchema, subject, version, rs.SchemaType)
	}
	c.mu.Lock()
	c.versions[key] = rs
	c.mu.Unlock()
	return rs, nil
}

// Latest fetches the latest live version of a subject, never from the cache
// (a subject gains versions): its id and text. A subject without versions
// is an error matching ErrRegistry (40401).
func (c *RegistryClient) Latest(ctx context.Context, subject string) (id int, schema string, err error) {
	var out struct {
		ID         int    `json:"id"`
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
	}
	if err := c.do(ctx, http.MethodGet, "/subjects/"+url.PathEscape(subject)+"/versions/latest", nil, &out); err != nil {
		return 0, "", err
	}
	if out.SchemaType != "" && out.SchemaType != "AVRO" {
		return 0, "", fmt.Errorf("%w: %s's latest version is %s, not AVRO", ErrInvalidSchema, subject, out.SchemaType)
	}
	return out.ID, out.Schema, nil
}
