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
// A dialler also checks WHO the server is (expect.go): the CA and the
// host name admit every key on that host (a proxy's beside its node's,
// or any node's where certificates carry 127.0.0.1), so every dial says
// whom it wants, an Expect, and ClientFor / ClientCredentials refuse
// anyone else in VerifyConnection, after chain and host name:
//
//	dial                                 wants
//	binlogd ─▶ member N (Paxos, Admin)   node N
//	CLI ─▶ binlogd                       node N if it knows N, else any node
//	reseed / recover ─▶ member N         node N
//	sqlproxy N ─▶ its binlogd            node N
//	sqlproxy ─▶ master's proxy           proxy M (M: the master in its view)
//	sqlproxy ─▶ MariaDB at mysql_addr    node K (K: the member there in its view)
//
// The errors name both: "peer at 127.0.0.1:23031 presented proxy 3, want
// node 3" (ErrWrongPeer). Client, without the check, is only their base.
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
