package tables

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
	hms "github.com/beltran/gohive/hive_metastore"
)

// conn is one Thrift connection to a metastore of hive.metastore.uris,
// opened on first use and again after a transport failure. The metastore's
// default transport: a plain socket (no SASL), TBufferedTransport and
// TBinaryProtocol. Not safe for concurrent use (Metastore serialises).
type conn struct {
	addrs       []string
	dialTimeout time.Duration
	callTimeout time.Duration
	trans       thrift.TTransport
	client      *hms.ThriftHiveMetastoreClient
}

// get returns the open client, dialling the metastores in order if none is.
func (c *conn) get(ctx context.Context) (*hms.ThriftHiveMetastoreClient, error) {
	if c.client != nil {
		return c.client, nil
	}
	var errs []error
	for _, addr := range c.addrs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cfg := &thrift.TConfiguration{ConnectTimeout: c.dialTimeout, SocketTimeout: c.callTimeout}
		trans := thrift.NewTBufferedTransport(thrift.NewTSocketConf(addr, cfg), 1<<16)
		if err := trans.Open(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		pf := thrift.NewTBinaryProtocolFactoryConf(cfg)
		c.trans = trans
		c.client = hms.NewThriftHiveMetastoreClient(thrift.NewTStandardClient(pf.GetProtocol(trans), pf.GetProtocol(trans)))
		return c.client, nil
	}
	return nil, fmt.Errorf("%w: %w", ErrUnavailable, errors.Join(errs...))
}

// check classifies the error of a call: a metastore's answer (one of its
// exceptions) is returned as is; anything else (a transport or protocol
// failure, a timeout) may have left the connection mid-message, so it is
// closed, to be dialled again by the next call, and the error marked
// ErrUnavailable.
func (c *conn) check(err error) error {
	if err == nil || isAnswer(err) {
		return err
	}
	c.close()
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

func (c *conn) close() {
	if c.trans != nil {
		_ = c.trans.Close()
	}
	c.trans, c.client = nil, nil
}

// isAnswer reports whether err is an exception the metastore sent.
func isAnswer(err error) bool {
	var (
		noSuch  *hms.NoSuchObjectException
		exists  *hms.AlreadyExistsException
		invalid *hms.InvalidObjectException
		op      *hms.InvalidOperationException
		meta    *hms.MetaException
	)
	return errors.As(err, &noSuch) || errors.As(err, &exists) || errors.As(err, &invalid) ||
		errors.As(err, &op) || errors.As(err, &meta)
}

func isNoSuchObject(err error) bool {
	var noSuch *hms.NoSuchObjectException
	return errors.As(err, &noSuch)
}
