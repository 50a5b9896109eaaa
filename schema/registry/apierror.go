package registry

import (
	"errors"
	"net/http"
)

// apiError is one row of the error table: a sentinel, the Confluent error
// code and the HTTP status the REST layer answers with.
type apiError struct {
	err    error
	code   int
	status int
}

// apiErrors maps every sentinel to what Confluent Schema Registry returns,
// so clients that switch on error_code behave the same against Tributary.
var apiErrors = []apiError{
	{ErrSubjectNotFound, 40401, http.StatusNotFound},
	{ErrVersionNotFound, 40402, http.StatusNotFound},
	{ErrSchemaNotFound, 40403, http.StatusNotFound},
	{ErrSubjectSoftDeleted, 40404, http.StatusNotFound},
	{ErrSubjectNotSoftDeleted, 40405, http.StatusNotFound},
	{ErrVersionSoftDeleted, 40406, http.StatusNotFound},
	{ErrVersionNotSoftDeleted, 40407, http.StatusNotFound},
	{ErrConfigNotFound, 40408, http.StatusNotFound},
	{ErrModeNotFound, 40409, http.StatusNotFound},
	{ErrIncompatible, 409, http.StatusConflict},
	{ErrInvalidSchema, 42201, http.StatusUnprocessableEntity},
	{ErrInvalidVersion, 42202, http.StatusUnprocessableEntity},
	{ErrInvalidCompatibility, 42203, http.StatusUnprocessableEntity},
	{ErrInvalidMode, 42204, http.StatusUnprocessableEntity},
	{ErrNotPermitted, 42205, http.StatusUnprocessableEntity},
	{ErrReferenceExists, 42206, http.StatusUnprocessableEntity},
	{ErrIDMismatch, 42207, http.StatusUnprocessableEntity},
	{ErrStore, 50001, http.StatusInternalServerError},
}

// ErrorCode returns the Confluent error code and HTTP status for err;
// unclassified errors are store errors (50001), as Confluent reports them.
func ErrorCode(err error) (code, status int) {
	for _, e := range apiErrors {
		if errors.Is(err, e.err) {
			return e.code, e.status
		}
	}
	return 50001, http.StatusInternalServerError
}

// confluentError is an error whose text is the message Confluent Schema
// Registry gives for it, word for word (clients show it to users); it
// wraps the sentinel that picks its code and status.
type confluentError struct {
	sentinel error
	message  string
}

func (e confluentError) Error() string { return e.message }
func (e confluentError) Unwrap() error { return e.sentinel }
