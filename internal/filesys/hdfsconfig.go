package filesys

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/properties"
)

// DefaultTicketRenewPeriod is how often a Kerberized HDFS client logs in
// again from its keytab (Confluent's kerberos.ticket.renew.period.ms).
const DefaultTicketRenewPeriod = time.Hour

// CipherAES is the only dfs.encrypt.data.transfer.cipher.suites value, and
// the only privacy cipher, that colinmarc/hdfs v2.4.0 reads correctly.
const CipherAES = "AES/CTR/NoPadding"

// HDFSKeys are the properties HDFSOptionsFromProperties reads: Confluent's
// HDFS connector's Kerberos keys and Hadoop's own spellings.
var HDFSKeys = []string{
	"hdfs.authentication.kerberos", "hadoop.security.authentication",
	"connect.hdfs.principal", "connect.hdfs.keytab", "hdfs.namenode.principal",
	"kerberos.ticket.renew.period.ms", "krb5.conf",
	"dfs.data.transfer.protection", "dfs.encrypt.data.transfer.cipher.suites",
}

// HDFSOptions are the client settings of an HDFS beyond its URI. The zero
// value is a plain cluster (simple authentication, the URI's user).
type HDFSOptions struct {
	// Kerberos, when set, authenticates to the NameNode with Kerberos
	// (hdfs.authentication.kerberos=true or
	// hadoop.security.authentication=kerberos); the URI's user is then
	// ignored: files belong to the principal.
	Kerberos *Kerberos
	// DataTransferProtection is the SASL protection of DataNode
	// connections (dfs.data.transfer.protection): "" (none: the cluster's
	// DataNodes use privileged ports), authentication or privacy. It must
	// not be lower than the cluster's. integrity is refused, see Validate.
	DataTransferProtection string
	// CipherSuites is the cluster's dfs.encrypt.data.transfer.cipher.suites;
	// privacy requires AES/CTR/NoPadding.
	CipherSuites string

	// namenodeDial replaces the NameNode dialer (tests).
	namenodeDial dialFunc
}

// Kerberos is a Kerberos login from a keytab.
type Kerberos struct {
	// Principal is the client, user[/instance][@REALM]
	// (connect.hdfs.principal); without a realm, krb5.conf's default_realm.
	Principal string
	// Keytab holds the principal's keys (connect.hdfs.keytab).
	Keytab string
	// Krb5Conf is the Kerberos configuration file (krb5.conf); default
	// $KRB5_CONFIG, then /etc/krb5.conf.
	Krb5Conf string
	// NameNodePrincipal is the NameNode's principal, service/host[@REALM]
	// (hdfs.namenode.principal, as Hadoop's dfs.namenode.kerberos.principal;
	// _HOST stands for the host of the NameNode address).
	NameNodePrincipal string
	// RenewPeriod is how often the client logs in again from the keytab
	// (kerberos.ticket.renew.period.ms), default DefaultTicketRenewPeriod;
	// tickets are also refreshed before they expire, whatever the period.
	RenewPeriod time.Duration
	// Logger receives failed renewals; default slog.Default(). Not
	// serialized (configurations travel as JSON to child processes).
	Logger *slog.Logger `json:"-"`
}

// WithLogger returns o with logger for its Kerberos renewals unless o
// names one already (o itself is not modified).
func (o HDFSOptions) WithLogger(logger *slog.Logger) HDFSOptions {
	if o.Kerberos != nil && o.Kerberos.Logger == nil {
		k := *o.Kerberos
		k.Logger = logger
		o.Kerberos = &k
	}
	return o
}

// HDFSOptionsFromProperties reads HDFSKeys from p; refused values are
// recorded in p (p.Err). The result is not validated: call Validate.
func HDFSOptionsFromProperties(p *properties.Props) HDFSOptions {
	var o HDFSOptions
	kerberos := p.Bool("hdfs.authentication.kerberos", false)
	if v, ok := p.Lookup("hadoop.security.authentication"); ok {
		switch strings.ToLower(v) {
		case "kerberos":
			kerberos = true
		case "simple":
			if kerberos {
				p.Reject("hadoop.security.authentication", errors.New("simple contradicts hdfs.authentication.kerberos=true"))
			}
		default:
			p.Reject("hadoop.security.authentication", errors.New("want kerberos or simple"))
		}
	}
	k := Kerberos{
		Principal:         p.String("connect.hdfs.principal"),
		Keytab:            p.String("connect.hdfs.keytab"),
		Krb5Conf:          p.String("krb5.conf"),
		NameNodePrincipal: p.String("hdfs.namenode.principal"),
		RenewPeriod:       p.Duration("kerberos.ticket.renew.period.ms", time.Millisecond, 1),
	}
	if kerberos {
		o.Kerberos = &k
	}
	o.DataTransferProtection = strings.ToLower(p.String("dfs.data.transfer.protection"))
	o.CipherSuites = p.String("dfs.encrypt.data.transfer.cipher.suites")
	return o
}

// Properties returns o as the keys HDFSOptionsFromProperties reads back,
// for the properties file of a child process.
func (o HDFSOptions) Properties() map[string]string {
	m := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("dfs.data.transfer.protection", o.DataTransferProtection)
	set("dfs.encrypt.data.transfer.cipher.suites", o.CipherSuites)
	if k := o.Kerberos; k != nil {
		m["hdfs.authentication.kerberos"] = "true"
		set("connect.hdfs.principal", k.Principal)
		set("connect.hdfs.keytab", k.Keytab)
		set("krb5.conf", k.Krb5Conf)
		set("hdfs.namenode.principal", k.NameNodePrincipal)
		if k.RenewPeriod > 0 {
			m["kerberos.ticket.renew.period.ms"] = fmt.Sprint(k.RenewPeriod.Milliseconds())
		}
	}
	return m
}

// Validate checks the options; errors wrap ErrHDFSConfig and name the key.
//
// colinmarc/hdfs v2.4.0 drops bytes on every DataNode read wrapped by its
// DIGEST-MD5 connection, that is under integrity and under privacy without
// AES: those settings are refused rather than failing at the first read.
func (o HDFSOptions) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrHDFSConfig}, args...)...)
	}
	switch o.DataTransferProtection {
	case "", "authentication":
	case "integrity":
		return bad("dfs.data.transfer.protection=integrity is not supported: colinmarc/hdfs v2.4.0 cannot read " +
			"from DataNodes under it; use authentication, or privacy with dfs.encrypt.data.transfer.cipher.suites=" + CipherAES)
	case "privacy":
		if !hasAES(o.CipherSuites) {
			return bad("dfs.data.transfer.protection=privacy needs dfs.encrypt.data.transfer.cipher.suites=%s "+
				"(on the cluster too): colinmarc/hdfs v2.4.0 cannot read from DataNodes under privacy without AES; got %q",
				CipherAES, o.CipherSuites)
		}
	default:
		return bad("dfs.data.transfer.protection=%q: want authentication or privacy", o.DataTransferProtection)
	}
	if o.CipherSuites != "" && !hasAES(o.CipherSuites) {
		return bad("dfs.encrypt.data.transfer.cipher.suites=%q: only %s is supported", o.CipherSuites, CipherAES)
	}
	k := o.Kerberos
	if k == nil {
		return nil
	}
	switch {
	case k.Principal == "":
		return bad("connect.hdfs.principal is required with Kerberos")
	case k.Keytab == "":
		return bad("connect.hdfs.keytab is required with Kerberos")
	case k.NameNodePrincipal == "":
		return bad("hdfs.namenode.principal is required with Kerberos (e.g. hdfs/_HOST@REALM)")
	case !strings.Contains(strings.SplitN(k.NameNodePrincipal, "@", 2)[0], "/"):
		return bad("hdfs.namenode.principal=%q: want service/host[@REALM]", k.NameNodePrincipal)
	case k.RenewPeriod < 0:
		return bad("kerberos.ticket.renew.period.ms must be positive")
	}
	if _, err := os.Stat(k.Keytab); err != nil {
		return bad("connect.hdfs.keytab: %w", err)
	}
	if conf := k.krb5Conf(); conf == "" {
		return bad("krb5.conf: no Kerberos configuration: set krb5.conf or KRB5_CONFIG (or provide /etc/krb5.conf)")
	} else if _, err := os.Stat(conf); err != nil {
		return bad("krb5.conf: %w", err)
	}
	return nil
}

func hasAES(suites string) bool {
	for _, s := range strings.Split(suites, ",") {
		if strings.EqualFold(strings.TrimSpace(s), CipherAES) {
			return true
		}
	}
	return false
}

// krb5Conf returns the configuration file to load, "" if none is known.
func (k *Kerberos) krb5Conf() string {
	if k.Krb5Conf != "" {
		return k.Krb5Conf
	}
	if v := os.Getenv("KRB5_CONFIG"); v != "" {
		// KRB5_CONFIG may list several files; the first is the main one.
		return strings.Split(v, ":")[0]
	}
	if _, err := os.Stat("/etc/krb5.conf"); err == nil {
		return "/etc/krb5.conf"
	}
	return ""
}
