package testenv

import (
	"os"
	"testing"
)

// EnvKafka holds host:port of an Apache Kafka broker, exported by
// `scripts/kafka.sh start`. `make test` does not start Kafka: it is for
// side-by-side benchmarks and for interoperability tests run by hand.
const EnvKafka = "TRIBUTARY_TEST_KAFKA"

// Kafka returns the address of the Apache Kafka broker or fails t.
func Kafka(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(EnvKafka)
	if addr == "" {
		t.Fatalf("Apache Kafka is not running: %s is unset; start it with "+
			"`bash scripts/kafka.sh start` and export what it prints", EnvKafka)
	}
	return addr
}
