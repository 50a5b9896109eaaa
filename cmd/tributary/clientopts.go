package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
)

// Errors the client-side tools return; main prints them on one line and
// exits non-zero.
var (
	// errBadFlag marks a flag value that does not parse or is out of range.
	errBadFlag = errors.New("bad flag value")
	// errTopicMissing is returned when a named topic does not exist.
	errTopicMissing = errors.New("topic does not exist")
	// errRecordsFailed is returned when some produced records were not acknowledged.
	errRecordsFailed = errors.New("records failed")
	// errUnreachable is returned when no bootstrap broker answered.
	errUnreachable = errors.New("cannot connect to the brokers")
)

// badFlag builds the one-line error for a flag whose value is wrong, naming
// the flag so that the user knows what to fix.
func badFlag(name, value, why string) error {
	return fmt.Errorf("%w: --%s %q: %s", errBadFlag, name, value, why)
}

// missingFlag is the error of a required flag not given; it names the flag
// only, never the placeholder its variable holds.
func missingFlag(name, want string) error {
	return fmt.Errorf("%w: --%s is required (%s)", errBadFlag, name, want)
}

// requireFlag is missingFlag unless fs has flag name set on the command line.
func requireFlag(fs *pflag.FlagSet, name, want string) error {
	if fs.Changed(name) {
		return nil
	}
	return missingFlag(name, want)
}

// clientOptions are the connection flags every client-side command shares.
// --command-config FILE is a Kafka client properties file, as Kafka's tools
// take it: bootstrap.servers, client.id and the security keys
// (security.protocol, ssl.*, sasl.*); --bootstrap and --client-id override
// the file's values. Other keys of the file are ignored.
type clientOptions struct {
	bootstrap      string
	clientID       string
	commandConfig  string
	requestTimeout time.Duration

	fs   *pflag.FlagSet
	file network.ClientConfig // read from --command-config by validate
}

const defaultRequestTimeout = 30 * time.Second

func (o *clientOptions) addFlags(fs *pflag.FlagSet) {
	o.fs = fs
	fs.StringVar(&o.bootstrap, "bootstrap", "", "comma-separated broker addresses HOST:PORT, also spelt --bootstrap-server (required unless --command-config gives bootstrap.servers)")
	fs.StringVar(&o.clientID, "client-id", "tributary-cli", "client.id sent to the broker")
	fs.StringVar(&o.commandConfig, "command-config", "",
		"Kafka client properties FILE: security.protocol, ssl.*, sasl.* (secrets as ${env:NAME} or ${file:PATH}), bootstrap.servers, client.id")
	fs.DurationVar(&o.requestTimeout, "request-timeout", defaultRequestTimeout,
		"how long admin requests (create, list, describe, delete, metadata), and produce's and consume's first look at the topic, may take")
}

// brokers are --bootstrap's, or the --command-config file's when the flag
// is not given.
func (o *clientOptions) brokers() []string {
	if o.bootstrap == "" && len(o.file.Brokers) > 0 {
		return o.file.Brokers
	}
	var out []string
	for _, b := range strings.Split(o.bootstrap, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// id is --client-id, or the --command-config file's client.id when the
// flag is not given.
func (o *clientOptions) id() string {
	if o.file.ClientID != "" && (o.fs == nil || !o.fs.Changed("client-id")) {
		return o.file.ClientID
	}
	return o.clientID
}

func (o *clientOptions) validate() error {
	if o.commandConfig != "" {
		c, err := readCommandConfig(o.commandConfig)
		if err != nil {
			return err
		}
		o.file = c
	}
	brokers := o.brokers()
	if len(brokers) == 0 {
		return missingFlag("bootstrap", "HOST:PORT, or bootstrap.servers in --command-config")
	}
	// The addresses may be the file's: name where the bad one came from.
	badAddr := func(why string) error { return badFlag("bootstrap", o.bootstrap, why) }
	if o.bootstrap == "" {
		badAddr = func(why string) error {
			return fmt.Errorf("%w: --command-config %s: bootstrap.servers %q: %s", errBadFlag, o.commandConfig, strings.Join(brokers, ","), why)
		}
	}
	for _, b := range brokers {
		host, port, ok := strings.Cut(b, ":")
		if !ok || host == "" {
			return badAddr("want HOST:PORT")
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return badAddr("port must be 1-65535")
		}
	}
	if o.requestTimeout <= 0 {
		return badFlag("request-timeout", o.requestTimeout.String(), "must be positive")
	}
	return nil
}

// connection is how every command connects; --request-timeout bounds admin
// requests (newAdmin), not the connection.
func (o *clientOptions) connection() network.ClientConfig {
	return network.ClientConfig{Brokers: o.brokers(), ClientID: o.id()}.Secured(o.file.Security())
}

// readCommandConfig reads a Kafka client properties file (--command-config)
// through the one properties reader; errors name the flag and the key.
func readCommandConfig(path string) (network.ClientConfig, error) {
	props, err := readPropertiesFile(path, nil)
	if err != nil {
		return network.ClientConfig{}, fmt.Errorf("%w: --command-config %s: %w", errBadFlag, path, err)
	}
	p := properties.New(props)
	c, err := network.ClientFromProperties(p, "")
	if err = errors.Join(p.Err(), err); err != nil {
		return network.ClientConfig{}, fmt.Errorf("%w: --command-config %s: %w", errBadFlag, path, err)
	}
	return c, nil
}

// reachError names the bootstrap addresses in err when err says the brokers
// could not be reached (a dial that failed or timed out, or no answer within
// --request-timeout), so that a wrong address reads as one.
func (o *clientOptions) reachError(err error) error {
	var netErr net.Error // context.DeadlineExceeded is one too
	if errors.As(err, &netErr) {
		return fmt.Errorf("%w at %s: %w", errUnreachable, strings.Join(o.brokers(), ","), err)
	}
	return err
}

// newClient returns a client with the command's producer or consumer
// options in extra; the caller closes it.
func (o *clientOptions) newClient(extra ...kgo.Opt) (*kgo.Client, error) {
	return network.NewClient(o.connection(), extra...)
}

// newAdmin returns an admin client; the caller closes it.
func (o *clientOptions) newAdmin() (*kadm.Client, error) {
	cl, err := o.newClient()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(o.requestTimeout.Milliseconds(), 1<<31-1)))
	return adm, nil
}

// producerFlags are the producer settings produce and bench share.
type producerFlags struct {
	acks         string
	compression  string
	lingerMs     int
	batchBytes   int
	maxBuffered  int
	disableIdemp bool
	delivery     time.Duration
}

// kgo's own defaults, spelled out so that a bench run states what it used.
const (
	defaultLingerMs    = 10
	defaultBatchBytes  = 1000012
	defaultMaxBuffered = 50000
)

func (p *producerFlags) addFlags(fs *pflag.FlagSet, defaultAcks string) {
	fs.StringVar(&p.acks, "acks", defaultAcks, "acknowledgements: -1 (all), 0 (none) or 1 (leader)")
	fs.StringVar(&p.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fs.IntVar(&p.lingerMs, "linger-ms", defaultLingerMs, "how long a partition's batch waits for more records")
	fs.IntVar(&p.batchBytes, "batch-bytes", defaultBatchBytes, "maximum bytes of one record batch")
	fs.IntVar(&p.maxBuffered, "max-buffered-records", defaultMaxBuffered,
		"records buffered in the client before producing blocks")
	fs.DurationVar(&p.delivery, "delivery-timeout", 2*time.Minute,
		"how long a record may wait for acknowledgement, retries included (Kafka's delivery.timeout.ms)")
	fs.BoolVar(&p.disableIdemp, "no-idempotence", false,
		"with --acks -1, produce without a producer id (idempotence is off anyway for acks 0 and 1)")
}

func (p *producerFlags) validate() error {
	if _, err := parseAcks(p.acks); err != nil {
		return err
	}
	if _, err := parseCompression(p.compression); err != nil {
		return err
	}
	if p.lingerMs < 0 || p.lingerMs > 60000 {
		return badFlag("linger-ms", strconv.Itoa(p.lingerMs), "must be 0-60000")
	}
	if p.batchBytes < 1024 {
		return badFlag("batch-bytes", strconv.Itoa(p.batchBytes), "must be at least 1024")
	}
	if p.maxBuffered < 1 {
		return badFlag("max-buffered-records", strconv.Itoa(p.maxBuffered), "must be at least 1")
	}
	if p.delivery <= 0 {
		return badFlag("delivery-timeout", p.delivery.String(), "must be positive")
	}
	return nil
}

// kgoOpts assumes validate succeeded.
func (p *producerFlags) kgoOpts() []kgo.Opt {
	acks, _ := parseAcks(p.acks)
	codec, _ := parseCompression(p.compression)
	opts := []kgo.Opt{
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(time.Duration(p.lingerMs) * time.Millisecond),
		kgo.ProducerBatchMaxBytes(int32(p.batchBytes)),
		kgo.MaxBufferedRecords(p.maxBuffered),
		kgo.RecordDeliveryTimeout(p.delivery),
	}
	// kgo refuses idempotence with anything but acks=all.
	if acks != kgo.AllISRAcks() || p.disableIdemp {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return opts
}

func parseAcks(s string) (kgo.Acks, error) {
	switch s {
	case "-1", "all":
		return kgo.AllISRAcks(), nil
	case "0":
		return kgo.NoAck(), nil
	case "1":
		return kgo.LeaderAck(), nil
	}
	return kgo.Acks{}, badFlag("acks", s, "want -1, 0 or 1")
}

func parseCompression(s string) (kgo.CompressionCodec, error) {
	if codec, ok := network.Compression(s); ok {
		return codec, nil
	}
	return kgo.CompressionCodec{}, badFlag("compression", s, "want none, gzip, snappy, lz4 or zstd")
}

// checkTopicName applies Kafka's topic name rules so that a typo fails here
// with the flag named rather than as a broker error code.
func checkTopicName(topic string) error {
	if topic == "" {
		return missingFlag("topic", "a topic name")
	}
	if topic == "." || topic == ".." || len(topic) > 249 {
		return badFlag("topic", topic, "not a legal topic name")
	}
	for _, c := range topic {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return badFlag("topic", topic, "topic names use only letters, digits, '.', '_' and '-'")
		}
	}
	return nil
}

// signalContext ends on SIGINT or SIGTERM so that a long consume or bench
// stops cleanly and still prints what it has.
func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
}

// ensureTopic creates topic with the given partition count if it does not
// exist yet and waits until its metadata lists leaders for every partition.
// It returns the partition count the topic has.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32) (int32, error) {
	_, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("create topic %s: %w", topic, err)
	}
	// Metadata may lag creation for a moment; poll with a short back-off
	// until every partition has a leader or ctx ends.
	for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, 500*time.Millisecond) {
		n, err := topicPartitions(ctx, adm, topic)
		if err == nil {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for topic %s: %w (last error: %v)", topic, ctx.Err(), err)
		case <-time.After(backoff):
		}
	}
}

// topicPartitions returns the number of partitions of topic, or an error if
// the topic is unknown or a partition has no leader.
func topicPartitions(ctx context.Context, adm *kadm.Client, topic string) (int32, error) {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	d, ok := details[topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return 0, fmt.Errorf("%w: %s", errTopicMissing, topic)
	}
	if d.Err != nil {
		return 0, fmt.Errorf("topic %s: %w", topic, d.Err)
	}
	if len(d.Partitions) == 0 {
		return 0, fmt.Errorf("topic %s has no partitions yet", topic)
	}
	for _, p := range d.Partitions {
		if p.Err != nil {
			return 0, fmt.Errorf("topic %s partition %d: %w", topic, p.Partition, p.Err)
		}
		if p.Leader < 0 {
			return 0, fmt.Errorf("topic %s partition %d has no leader", topic, p.Partition)
		}
	}
	return int32(len(d.Partitions)), nil
}
