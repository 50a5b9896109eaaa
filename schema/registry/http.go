package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Content types of the Confluent API. Responses use ContentTypeV1 unless
// the client's Accept asks for one of the others.
const (
	ContentTypeV1      = "application/vnd.schemaregistry.v1+json"
	ContentTypeDefault = "application/vnd.schemaregistry+json"
	ContentTypeJSON    = "application/json"
)

// maxBody bounds a request body; Avro schemas are small.
const maxBody = 16 << 20

// acceptedRequestTypes are the request content types Confluent's clients
// send (octet-stream and none come from curl and older clients).
var acceptedRequestTypes = map[string]bool{
	ContentTypeV1: true, ContentTypeDefault: true, ContentTypeJSON: true,
	"application/octet-stream": true, "": true,
}

// Handler returns the Confluent Schema Registry REST API over r.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, fn func(w http.ResponseWriter, req *http.Request) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
			r.serve(w, req, fn)
		})
	}
	h("GET /{$}", func(http.ResponseWriter, *http.Request) (any, error) { return struct{}{}, nil })
	h("GET /schemas/types", func(http.ResponseWriter, *http.Request) (any, error) {
		return []string{SchemaTypeAvro}, nil
	})
	h("GET /schemas/ids/{id}", r.getSchemaByID)
	h("GET /schemas/ids/{id}/schema", r.getRawSchemaByID)
	h("GET /schemas/ids/{id}/versions", r.getSchemaVersions)
	h("GET /schemas/ids/{id}/subjects", r.getSchemaSubjects)
	h("GET /schemas", r.getSchemas)
	h("GET /subjects", r.getSubjects)
	h("POST /subjects/{subject}", r.postLookup)
	h("DELETE /subjects/{subject}", r.deleteSubject)
	h("GET /subjects/{subject}/versions", r.getVersions)
	h("POST /subjects/{subject}/versions", r.postRegister)
	h("GET /subjects/{subject}/versions/{version}", r.getVersion)
	h("GET /subjects/{subject}/versions/{version}/schema", r.getRawVersion)
	h("GET /subjects/{subject}/versions/{version}/referencedby", r.getReferencedBy)
	h("DELETE /subjects/{subject}/versions/{version}", r.deleteVersion)
	h("POST /compatibility/subjects/{subject}/versions", r.postCompatibility)
	h("POST /compatibility/subjects/{subject}/versions/{version}", r.postCompatibility)
	h("GET /config", r.getConfig)
	h("PUT /config", r.putConfig)
	h("GET /config/{subject}", r.getConfig)
	h("PUT /config/{subject}", r.putConfig)
	h("DELETE /config/{subject}", r.deleteConfig)
	h("GET /mode", r.getMode)
	h("PUT /mode", r.putMode)
	h("GET /mode/{subject}", r.getMode)
	h("PUT /mode/{subject}", r.putMode)
	h("DELETE /mode/{subject}", r.deleteMode)
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		writeError(w, req, http.StatusNotFound, http.StatusNotFound, "HTTP 404 Not Found")
	})
	return mux
}

// rawText marks a response written as the bare schema text (the .../schema
// endpoints), not as a JSON value.
type rawText string

func (r *Registry) serve(w http.ResponseWriter, req *http.Request, fn func(http.ResponseWriter, *http.Request) (any, error)) {
	if req.Method == http.MethodPost || req.Method == http.MethodPut {
		ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		if !acceptedRequestTypes[ct] {
			writeError(w, req, http.StatusUnsupportedMediaType, http.StatusUnsupportedMediaType,
				fmt.Sprintf("HTTP 415 Unsupported Media Type: %q", req.Header.Get("Content-Type")))
			return
		}
	}
	out, err := fn(w, req)
	if err != nil {
		var bad badRequest
		if errors.As(err, &bad) {
			writeError(w, req, http.StatusBadRequest, http.StatusBadRequest, bad.Error())
			return
		}
		code, status := ErrorCode(err)
		if status >= 500 {
			r.cfg.Logger.Error("registry request failed", "method", req.Method, "path", req.URL.Path, "err", err)
		}
		writeError(w, req, status, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", responseType(req))
	if raw, ok := out.(rawText); ok {
		io.WriteString(w, string(raw))
		return
	}
	json.NewEncoder(w).Encode(out)
}

// responseType honours an Accept header naming one of the API's types.
func responseType(req *http.Request) string {
	for _, part := range strings.Split(req.Header.Get("Accept"), ",") {
		t, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
		switch t {
		case ContentTypeV1, ContentTypeDefault, ContentTypeJSON:
			return t
		}
	}
	return ContentTypeV1
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

func writeError(w http.ResponseWriter, req *http.Request, status, code int, msg string) {
	w.Header().Set("Content-Type", responseType(req))
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(ErrorBody{ErrorCode: code, Message: msg})
}

// badRequest is a body the API cannot decode: HTTP 400, as Confluent.
type badRequest struct{ error }

func decodeBody(req *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(req.Body, maxBody)).Decode(v); err != nil {
		return badRequest{fmt.Errorf("malformed JSON body: %v", err)}
	}
	return nil
}

func flag(req *http.Request, name string) bool {
	v, _ := strconv.ParseBool(req.URL.Query().Get(name))
	return v
}

func pathID(req *http.Request) (int, error) {
	id, err := strconv.Atoi(req.PathValue("id"))
	if err != nil || id < 1 {
		return 0, fmt.Errorf("%w: id %q", ErrSchemaNotFound, req.PathValue("id"))
	}
	return id, nil
}

func (r *Registry) getSchemaByID(_ http.ResponseWriter, req *http.Request) (any, error) {
	id, err := pathID(req)
	if err != nil {
		return nil, err
	}
	rec, err := r.Schema(req.Context(), id)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"schema": rec.Schema}
	if rec.Type != SchemaTypeAvro {
		out["schemaType"] = rec.Type
	}
	if len(rec.References) > 0 {
		out["references"] = rec.References
	}
	return out, nil
}

func (r *Registry) getRawSchemaByID(_ http.ResponseWriter, req *http.Request) (any, error) {
	id, err := pathID(req)
	if err != nil {
		return nil, err
	}
	rec, err := r.Schema(req.Context(), id)
	if err != nil {
		return nil, err
	}
	return rawText(rec.Schema), nil
}

func (r *Registry) getSchemaVersions(_ http.ResponseWriter, req *http.Request) (any, error) {
	id, err := pathID(req)
	if err != nil {
		return nil, err
	}
	return r.SchemaVersions(req.Context(), id, flag(req, "deleted"))
}

func (r *Registry) getSchemaSubjects(_ http.ResponseWriter, req *http.Request) (any, error) {
	id, err := pathID(req)
	if err != nil {
		return nil, err
	}
	refs, err := r.SchemaVersions(req.Context(), id, flag(req, "deleted"))
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, ref := range refs {
		if len(out) == 0 || out[len(out)-1] != ref.Subject {
			out = append(out, ref.Subject)
		}
	}
	return out, nil
}

func (r *Registry) getSubjects(_ http.ResponseWriter, req *http.Request) (any, error) {
	deletedOnly := flag(req, "deletedOnly")
	all, err := r.Subjects(req.Context(), flag(req, "deleted") || deletedOnly)
	if err != nil {
		return nil, err
	}
	var live []string
	if deletedOnly {
		if live, err = r.Subjects(req.Context(), false); err != nil {
			return nil, err
		}
	}
	prefix := req.URL.Query().Get("subjectPrefix")
	out := []string{}
	for _, s := range all {
		if strings.HasPrefix(s, prefix) && !(deletedOnly && slices.Contains(live, s)) {
			out = append(out, s)
		}
	}
	return out, nil
}

// getSchemas lists schemas (GET /schemas) with Confluent's subjectPrefix,
// deleted, latestOnly, offset and limit parameters.
func (r *Registry) getSchemas(_ http.ResponseWriter, req *http.Request) (any, error) {
	q := req.URL.Query()
	out, err := r.ListSchemas(req.Context(), q.Get("subjectPrefix"), flag(req, "deleted"), flag(req, "latestOnly"))
	if err != nil {
		return nil, err
	}
	if off, err := strconv.Atoi(q.Get("offset")); err == nil && off > 0 {
		out = out[min(off, len(out)):]
	}
	if limit, err := strconv.Atoi(q.Get("limit")); err == nil && limit > 0 && limit < len(out) {
		out = out[:limit]
	}
	return out, nil
}

type modeBody struct {
	Mode string `json:"mode"`
}

func (r *Registry) getMode(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject := req.PathValue("subject")
	var (
		mode Mode
		err  error
	)
	if subject == "" || flag(req, "defaultToGlobal") {
		mode, err = r.Mode(req.Context(), subject)
	} else {
		mode, err = r.store.Mode(req.Context(), subject)
	}
	if err != nil {
		return nil, err
	}
	return map[string]Mode{"mode": mode}, nil
}

func (r *Registry) putMode(_ http.ResponseWriter, req *http.Request) (any, error) {
	var body modeBody
	if err := decodeBody(req, &body); err != nil {
		return nil, err
	}
	mode, err := ParseMode(body.Mode)
	if err != nil {
		return nil, err
	}
	if err := r.SetMode(req.Context(), req.PathValue("subject"), mode, flag(req, "force")); err != nil {
		return nil, err
	}
	return map[string]Mode{"mode": mode}, nil
}

func (r *Registry) deleteMode(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject := req.PathValue("subject")
	mode, err := r.store.Mode(req.Context(), subject)
	if err != nil {
		return nil, err
	}
	if err := r.store.DeleteMode(req.Context(), subject); err != nil {
		return nil, err
	}
	return map[string]Mode{"mode": mode}, nil
}

func (r *Registry) postLookup(_ http.ResponseWriter, req *http.Request) (any, error) {
	var body SchemaInput
	if err := decodeBody(req, &body); err != nil {
		return nil, err
	}
	return r.Lookup(req.Context(), req.PathValue("subject"), body, flag(req, "deleted"))
}

func (r *Registry) deleteSubject(_ http.ResponseWriter, req *http.Request) (any, error) {
	return r.DeleteSubject(req.Context(), req.PathValue("subject"), flag(req, "permanent"))
}

func (r *Registry) getVersions(_ http.ResponseWriter, req *http.Request) (any, error) {
	return r.VersionNumbers(req.Context(), req.PathValue("subject"), flag(req, "deleted"))
}

func (r *Registry) postRegister(_ http.ResponseWriter, req *http.Request) (any, error) {
	var body SchemaInput
	if err := decodeBody(req, &body); err != nil {
		return nil, err
	}
	id, err := r.Register(req.Context(), req.PathValue("subject"), body, flag(req, "normalize"))
	if err != nil {
		return nil, err
	}
	return map[string]int{"id": id}, nil
}

func (r *Registry) getVersion(_ http.ResponseWriter, req *http.Request) (any, error) {
	return r.Version(req.Context(), req.PathValue("subject"), req.PathValue("version"), flag(req, "deleted"))
}

func (r *Registry) getRawVersion(_ http.ResponseWriter, req *http.Request) (any, error) {
	sv, err := r.Version(req.Context(), req.PathValue("subject"), req.PathValue("version"), flag(req, "deleted"))
	if err != nil {
		return nil, err
	}
	return rawText(sv.Schema), nil
}

func (r *Registry) getReferencedBy(_ http.ResponseWriter, req *http.Request) (any, error) {
	return r.ReferencedBy(req.Context(), req.PathValue("subject"), req.PathValue("version"))
}

func (r *Registry) deleteVersion(_ http.ResponseWriter, req *http.Request) (any, error) {
	return r.DeleteVersion(req.Context(), req.PathValue("subject"), req.PathValue("version"), flag(req, "permanent"))
}

// CompatibilityResult is the body of the compatibility endpoint.
type CompatibilityResult struct {
	IsCompatible bool     `json:"is_compatible"`
	Messages     []string `json:"messages,omitempty"`
}

func (r *Registry) postCompatibility(_ http.ResponseWriter, req *http.Request) (any, error) {
	var body SchemaInput
	if err := decodeBody(req, &body); err != nil {
		return nil, err
	}
	var problems []string
	var err error
	if version := req.PathValue("version"); version != "" {
		problems, err = r.CheckCompatibility(req.Context(), req.PathValue("subject"), version, body)
	} else {
		problems, err = r.CheckCompatibilityAll(req.Context(), req.PathValue("subject"), body)
	}
	verbose := flag(req, "verbose")
	if verbose && errors.Is(err, ErrInvalidSchema) {
		// Confluent's verbose answer to a schema it cannot parse: not
		// compatible, and why.
		problems, err = []string{err.Error()}, nil
	}
	if err != nil {
		return nil, err
	}
	res := CompatibilityResult{IsCompatible: len(problems) == 0}
	if verbose {
		res.Messages = append([]string{}, problems...)
	}
	return res, nil
}

func (r *Registry) getConfig(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject := req.PathValue("subject")
	var (
		level Level
		err   error
	)
	if subject == "" || flag(req, "defaultToGlobal") {
		level, err = r.Level(req.Context(), subject)
	} else {
		level, err = r.store.Compatibility(req.Context(), subject)
	}
	if err != nil {
		return nil, err
	}
	return map[string]Level{"compatibilityLevel": level}, nil
}

func (r *Registry) putConfig(_ http.ResponseWriter, req *http.Request) (any, error) {
	var body struct {
		Compatibility string `json:"compatibility"`
	}
	if err := decodeBody(req, &body); err != nil {
		return nil, err
	}
	level, err := ParseLevel(body.Compatibility)
	if err != nil {
		return nil, err
	}
	if err := r.store.SetCompatibility(req.Context(), req.PathValue("subject"), level); err != nil {
		return nil, err
	}
	return map[string]Level{"compatibility": level}, nil
}

func (r *Registry) deleteConfig(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject := req.PathValue("subject")
	level, err := r.store.Compatibility(req.Context(), subject)
	if err != nil {
		return nil, err
	}
	if err := r.store.DeleteCompatibility(req.Context(), subject); err != nil {
		return nil, err
	}
	return map[string]Level{"compatibilityLevel": level}, nil
}
