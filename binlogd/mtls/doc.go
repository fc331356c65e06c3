// Package mtls loads the certificate files of phxgo's mutually
// authenticated TLS links and builds their tls.Configs:
//
//	binlogd ──gRPC (Paxos, Admin)──▶ binlogd        node cert ▶ node cert
//	binlogd CLI ──gRPC (Admin)─────▶ binlogd        admin (or node) cert
//	sqlproxy ──gRPC (Admin.Status)─▶ its binlogd     proxy cert
//	sqlproxy ──MySQL hop (SSL)─────▶ master's sqlproxy  proxy ▶ proxy
//
// One node uses one certificate for both directions, so it carries
// serverAuth and clientAuth; each side accepts only a peer whose
// certificate chains to the cluster's CA.
//
// Identities (identity.go): every certificate names exactly one holder in
// a SAN URI, phxgo://node/N (binlogd N), phxgo://proxy/N (sqlproxy N) or
// phxgo://admin (the operator's CLI). The CA says a peer belongs to the
// cluster; the identity says what it may do: binlogd authorises each gRPC
// call by it (binlogd/node/authz.go) and ties a Paxos message's From to
// it, and a sqlproxy accepts a forwarding hop only from a proxy. Load
// refuses a certificate without an identity (ErrNoIdentity: one made by
// make-test-ca.sh before identities existed), telling the operator to
// re-issue it, rather than letting every peer refuse it later.
//
// The issuer (issue.go) makes a CA and certificates in pure Go, never
// overwriting a file: WriteCA, then WriteCert per identity, into one
// directory named as DirFiles says (ca.crt, node3.crt, proxy3.key,
// admin.crt, ...). `binlogd init` and localcluster use it;
// scripts/make-test-ca.sh makes the same files with openssl.
//
// Load checks what an operator gets wrong before any connection exists
// (unreadable file, expired certificate, a key that is not the
// certificate's, a certificate another CA signed, no identity) and its
// errors name the file; callers add the config key.
package mtls
