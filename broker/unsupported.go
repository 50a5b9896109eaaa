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
// api.version.request=false) sends such a request on every reconnect, so
// the line is rate-limited per API and version: an operator sees, once a
// second at most, which client sends what, and the rest is counted in
// "repeated". r may be nil if the header did not parse.
func (b *Broker) refuseUnsupported(c net.Conn, r *request, err error) {
	b.metrics.requestErrors.WithLabelValues("unsupported").Inc()
	remote := c.RemoteAddr().String()
	b.logger.Debug("closing connection on unsupported request", "remote", remote, "err", err)
	if r == nil {
		b.res.logs.log(slog.LevelWarn, "bad-request-unsupported", "closing connections on unsupported requests", "remote", remote, "last_err", err)
		return
	}
	clientID := ""
	if r.clientID != nil {
		clientID = *r.clientID
	}
	supported := "none"
	kind := "unsupported-api"
	if spec, ok := apiTable[r.key]; ok {
		supported = fmt.Sprintf("v%d-v%d", spec.min, spec.max)
		// Kinds stay few: per known API, one per plausible version and
		// one for the rest, so that random headers cannot make every
		// request a line of its own.
		v := "other"
		if r.version >= 0 && r.version < 64 {
			v = fmt.Sprint(r.version)
		}
		kind = fmt.Sprintf("unsupported-%d-%s", r.key, v)
	}
	b.res.logs.log(slog.LevelWarn, kind, "refusing an unsupported request version; closing the connection",
		"api", kmsg.NameForKey(r.key), "api_key", r.key, "version", r.version, "supported", supported,
		"client_id", clientID, "remote", remote)
}
