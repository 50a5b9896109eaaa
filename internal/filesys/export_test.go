package filesys

import krb "github.com/jcmturner/gokrb5/v8/client"

// WithNamenodeDial returns o dialing NameNodes with dial.
func WithNamenodeDial(o HDFSOptions, dial dialFunc) HDFSOptions {
	o.namenodeDial = dial
	return o
}

// KerberosClientOf returns the Kerberos client of an HDFS opened with
// Kerberos, nil otherwise.
func KerberosClientOf(fsys FS) *krb.Client {
	if h, ok := fsys.(hdfsFS); ok && h.login != nil {
		return h.login.client
	}
	return nil
}
