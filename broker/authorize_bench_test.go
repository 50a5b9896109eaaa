package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// BenchmarkProduceAuthorizer: produce throughput (1 KiB records, acks=1)
// with the authorizer off and on with 10,000 ACLs loaded (the principal's
// own Write among them); the issue asks for on ≥ 95% of off.
func BenchmarkProduceAuthorizer(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on-10000-acls"
		}
		b.Run(name, func(b *testing.B) {
			tb := newTestBroker(b, func(c *config.Config) { c.Authorizer.Enabled = on })
			if on {
				all := map[acl.Pattern][]acl.Entry{}
				for i := range 9999 {
					all[acl.Pattern{Type: acl.ResourceTopic, Name: fmt.Sprintf("topic-%d", i), Pattern: acl.PatternLiteral}] =
						[]acl.Entry{{Principal: fmt.Sprintf("User:u%d", i%100), Host: "*", Operation: acl.OpWrite, Permission: acl.Allow}}
				}
				for _, op := range []acl.Operation{acl.OpWrite, acl.OpCreate} {
					p := acl.Pattern{Type: acl.ResourceTopic, Name: "bench", Pattern: acl.PatternLiteral}
					all[p] = append(all[p], acl.Entry{Principal: "User:ANONYMOUS", Host: "*", Operation: op, Permission: acl.Allow})
				}
				all[acl.Pattern{Type: acl.ResourceCluster, Name: acl.ClusterName, Pattern: acl.PatternLiteral}] =
					[]acl.Entry{{Principal: "User:ANONYMOUS", Host: "*", Operation: acl.OpAll, Permission: acl.Allow}}
				tb.Authorizer().Replace(all)
			}
			cl := newClient(b, tb.Addr(), kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.LeaderAck()),
				kgo.DisableIdempotentWrite(), kgo.ProducerLinger(time.Millisecond))
			ctx := testenv.Context(b, 5*time.Minute)
			value := make([]byte, 1024)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bench", Value: value}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(value)))
			b.ResetTimer()
			start := time.Now()
			errs := make(chan error, 1)
			for i := 0; i < b.N; i++ {
				cl.Produce(ctx, &kgo.Record{Topic: "bench", Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
		})
	}
}
