package localcluster

// Prepare writes every node's config, the credentials and (unless TLS is
// off) the certificates, exactly as Start does, but starts nothing: for a
// caller that launches the nodes its own way, e.g. through the systemd
// units' command lines (binlogd/e2e/units_test.go). Open(spec) then
// reaches the nodes once they run.
func Prepare(spec Spec) error {
	if err := spec.validate(); err != nil {
		return err
	}
	return spec.writeConfigs()
}
