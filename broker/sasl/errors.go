package sasl

import "errors"

var (
	// ErrAuthenticationFailed: the client's credentials were refused or its
	// messages were malformed (SASL_AUTHENTICATION_FAILED). Its message is
	// the same whether the user exists or not.
	ErrAuthenticationFailed = errors.New("sasl: authentication failed")
	// ErrUnsupportedMechanism: the mechanism is not in
	// sasl.enabled.mechanisms (UNSUPPORTED_SASL_MECHANISM).
	ErrUnsupportedMechanism = errors.New("sasl: unsupported SASL mechanism")
	// ErrIllegalState: Step was called on a finished session
	// (ILLEGAL_SASL_STATE).
	ErrIllegalState = errors.New("sasl: session already finished")
	// ErrInvalidConfig: a SASL key of the broker configuration is wrong;
	// the error names the key.
	ErrInvalidConfig = errors.New("sasl: invalid configuration")
	// ErrMalformedCredential: a stored credential (a users file line, a
	// /config/users node) cannot be read.
	ErrMalformedCredential = errors.New("sasl: malformed credential")
	// ErrCredentialNotFound: a SCRAM credential to delete or describe does
	// not exist (RESOURCE_NOT_FOUND).
	ErrCredentialNotFound = errors.New("sasl: credential does not exist")
	// ErrUnacceptableCredential: a SCRAM credential to store is refused,
	// e.g. fewer than MinIterations (UNACCEPTABLE_CREDENTIAL).
	ErrUnacceptableCredential = errors.New("sasl: unacceptable credential")
	// ErrClosed: the credential store was closed.
	ErrClosed = errors.New("sasl: credential store closed")
)

// authError is what a Session's Step returns on a refused login: its
// message is Kafka's generic one (it never tells an unknown user from a
// wrong password) and reason, for the broker's log, is not sent.
type authError struct {
	mechanism string
	reason    string
}

func (e *authError) Error() string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + e.mechanism
}

func (e *authError) Unwrap() error { return ErrAuthenticationFailed }

// Reason returns why the login failed, for the server's log only: it may
// say the message was malformed or the user asked for a delegation token,
// but, like the error itself, it says "invalid credentials" both for an
// unknown user and for a wrong password.
func Reason(err error) string {
	var ae *authError
	if errors.As(err, &ae) {
		return ae.reason
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

func failed(mechanism, reason string) error {
	return &authError{mechanism: mechanism, reason: reason}
}

// invalidCredentials is the one reason given for an unknown user and for a
// wrong password alike.
const invalidCredentials = "invalid credentials"
