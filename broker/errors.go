package broker

import "errors"

var (
	// ErrClosed is returned by calls on a Broker that has been closed.
	ErrClosed = errors.New("broker: closed")
	// ErrStarted is returned by Start or Serve on a Broker already started.
	ErrStarted = errors.New("broker: already started")
	// ErrNotStarted is returned by topic administration before Start: the
	// broker is not part of a cluster yet.
	ErrNotStarted = errors.New("broker: not started")
	// ErrBadFrame marks a request frame that cannot be decoded: the
	// connection it came on is closed.
	ErrBadFrame = errors.New("broker: malformed request frame")
	// ErrFrameTooLarge marks a frame over socket.request.max.bytes.
	ErrFrameTooLarge = errors.New("broker: request frame too large")
	// ErrUnsupportedRequest marks an API key or version this broker does
	// not implement.
	ErrUnsupportedRequest = errors.New("broker: unsupported request")
	// ErrInvalidTopic marks a topic name Kafka would reject.
	ErrInvalidTopic = errors.New("broker: invalid topic name")
	// ErrTopicExists is returned when creating a topic that exists.
	ErrTopicExists = errors.New("broker: topic already exists")
	// ErrUnknownTopic is returned for a topic that does not exist.
	ErrUnknownTopic = errors.New("broker: unknown topic")
)
