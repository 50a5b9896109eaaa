package filesys

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	krb "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

// kerberosLogin is a gokrb5 client logged in from a keytab and a goroutine
// logging it in again every RenewPeriod. gokrb5 also refreshes the TGT
// before it expires (at 5/6 of its life) and fetches a new service ticket
// when the cached one has expired, so the NameNode connections colinmarc
// redials after a failure authenticate with a live ticket however long the
// run; the periodic login is Confluent's kerberos.ticket.renew.period.ms,
// which also picks up a rotated keytab.
type kerberosLogin struct {
	client *krb.Client
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

func newKerberosLogin(ctx context.Context, k *Kerberos) (*kerberosLogin, error) {
	confPath := k.krb5Conf()
	cfg, err := config.Load(confPath)
	if err != nil {
		return nil, fmt.Errorf("%w: krb5.conf %s: %w", ErrKerberos, confPath, err)
	}
	kt, err := keytab.Load(k.Keytab)
	if err != nil {
		return nil, fmt.Errorf("%w: connect.hdfs.keytab %s: %w", ErrKerberos, k.Keytab, err)
	}
	user, realm, ok := strings.Cut(k.Principal, "@")
	if !ok {
		realm = cfg.LibDefaults.DefaultRealm
	}
	if realm == "" {
		return nil, fmt.Errorf("%w: connect.hdfs.principal %q names no realm and krb5.conf %s no default_realm",
			ErrKerberos, k.Principal, confPath)
	}
	logger := k.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// PA-FX-FAST is off as in MIT's and Java's clients: KDCs (Kerby,
	// Active Directory) reject gokrb5's encoding of it.
	c := krb.NewWithKeytab(user, realm, kt, cfg, krb.DisablePAFXFAST(true))
	errc := make(chan error, 1)
	go func() { errc <- c.Login() }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		c.Destroy()
		return nil, fmt.Errorf("%w: as %s@%s with connect.hdfs.keytab %s: %w", ErrKerberos, user, realm, k.Keytab, err)
	}
	l := &kerberosLogin{client: c, stop: make(chan struct{}), done: make(chan struct{})}
	period := k.RenewPeriod
	if period == 0 {
		period = DefaultTicketRenewPeriod
	}
	go l.renew(period, logger.With("principal", user+"@"+realm))
	return l, nil
}

func (l *kerberosLogin) renew(period time.Duration, logger *slog.Logger) {
	defer close(l.done)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
			// A failure keeps the current tickets; the next period retries.
			if err := l.client.Login(); err != nil {
				logger.Warn("hdfs: kerberos login from the keytab failed", "err", err)
			}
		}
	}
}

// close stops the renewals and forgets the tickets; nil is a no-op.
func (l *kerberosLogin) close() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		l.client.Destroy()
	})
}
