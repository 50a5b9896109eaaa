package broker

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// refuseUnsupported counts and logs a request for an API or version that
// apiTable does not list; the caller closes the connection, as Kafka does.
// A client that never asks ApiVersions (an old Sarama, librdkafka with
// api.version.request=false) sends a version below our range on every
// reconnect: such a refusal is logged once a second at most per API and
// version, so that an operator sees which client sends what, and the rest
// is counted in "repeated". Newer versions and unknown APIs come from
// broken or hostile clients (a well-behaved one asks ApiVersions first):
// they share one kind, so that random headers cannot make every request a
// line of its own. r may be nil if the header did not parse.
func (b *Broker) refuseUnsupported(c net.Conn, r *request, err error) {
	b.metrics.requestErrors.WithLabelValues("unsupported").Inc()
	remote := c.RemoteAddr().String()
	b.logger.Debug("closing connection on unsupported request", "remote", remote, "err", err)
	if r == nil {
		b.res.logs.log(slog.LevelWarn, "bad-request-unsupported", "closing connections on unsupported requests",
			"remote", remote, "last_err", err)
		return
	}
	clientID := ""
	if r.clientID != nil {
		clientID = *r.clientID
	}
	kind, supported := "bad-request-unsupported", "none"
	if spec, ok := apiTable[r.key]; ok {
		supported = fmt.Sprintf("v%d-v%d", spec.min, spec.max)
		if r.version >= 0 && r.version < spec.min {
			kind = fmt.Sprintf("unsupported-%d-%d", r.key, r.version)
		}
	}
	b.res.logs.log(slog.LevelWarn, kind, "refusing an unsupported request version; closing the connection",
		"api", kmsg.NameForKey(r.key), "api_key", r.key, "version", r.version, "supported", supported,
		"client_id", clientID, "remote", remote)
}
